// SPDX-License-Identifier: GPL-2.0

//! BFQ-like policy (being written).
