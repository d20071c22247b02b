// SPDX-License-Identifier: GPL-2.0

//! The benches' random numbers: a small, fast, seeded generator, so that
//! every run of a bench sees the same requests.

/// A small, fast generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
