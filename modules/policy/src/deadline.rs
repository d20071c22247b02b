// SPDX-License-Identifier: GPL-2.0

//! mq-deadline parity policy (being written).
