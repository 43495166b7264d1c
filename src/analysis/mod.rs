//! Figures derived from raw measurements by a method of their own, above
//! the plain records and free of the kernel and the machine:
//! [`kernel_counts`] attributes a guest's kernel instruction counts.

pub mod kernel_counts;
