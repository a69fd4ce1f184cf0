//! One R1CS matrix (A, B or C) in compressed sparse rows over z = (inputs..., aux...).
//!
//! Coefficients are stored by id into the shape's coefficient table rather than as 32-byte
//! scalars: almost all R1CS coefficients are ±1 or one of a few hundred constants (powers of
//! two for bit packing, Poseidon's round constants and MDS entries), so an entry costs 8 bytes
//! (column, coefficient id) instead of 36. Ids [`ONE`] and [`MINUS_ONE`] are fixed, so that a
//! product needs no multiplication for them.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Id of the coefficient +1 in every coefficient table.
pub const ONE: u32 = 0;
/// Id of the coefficient −1 in every coefficient table.
pub const MINUS_ONE: u32 = 1;

/// The variable vector z = (inputs..., aux...) without concatenating the two assignments
/// (which would copy the whole witness once per proof).
#[derive(Clone, Copy)]
pub struct Assignment<'a> {
    pub inputs: &'a [Scalar],
    pub aux: &'a [Scalar],
}

impl Assignment<'_> {
    pub fn len(&self) -> usize {
        self.inputs.len() + self.aux.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, column: u32) -> Scalar {
        let column = column as usize;
        match column.checked_sub(self.inputs.len()) {
            None => self.inputs[column],
            Some(aux) => self.aux[aux],
        }
    }
}

/// Compressed sparse rows: row `r` has the entries `row_starts[r]..row_starts[r + 1]` of
/// `columns` and `coefficient_ids`. Rows keep the order of the linear combination they come
/// from (inputs, then aux, each by index); no column repeats within a row, and no entry has a
/// zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseMatrix {
    pub(super) row_starts: Vec<u32>,
    pub(super) columns: Vec<u32>,
    pub(super) coefficient_ids: Vec<u32>,
}

impl Default for SparseMatrix {
    fn default() -> Self {
        SparseMatrix {
            row_starts: vec![0],
            columns: Vec::new(),
            coefficient_ids: Vec::new(),
        }
    }
}

impl SparseMatrix {
    pub(super) fn from_parts(row_starts: Vec<u32>, columns: Vec<u32>, coefficient_ids: Vec<u32>) -> Self {
        SparseMatrix {
            row_starts,
            columns,
            coefficient_ids,
        }
    }

    /// Whether this is a matrix extraction could have made over `variables` values and a
    /// coefficient table of `coefficients`: row starts ascending from 0 to the entry count,
    /// every column and coefficient id in range (what a product relies on to stay in bounds).
    pub(super) fn check(&self, variables: usize, coefficients: usize) -> Result<(), String> {
        let entries = self.columns.len();
        if self.row_starts.first() != Some(&0) || self.row_starts.last() != Some(&(entries as u32)) || self.coefficient_ids.len() != entries {
            return Err(format!("row starts do not run from 0 to its {entries} entries"));
        }
        if !self.row_starts.par_windows(2).all(|w| w[0] <= w[1]) {
            return Err("row starts descend".into());
        }
        if self.columns.par_iter().any(|&c| c as usize >= variables) {
            return Err(format!("a column is past the {variables} variables"));
        }
        if self.coefficient_ids.par_iter().any(|&id| id as usize >= coefficients) {
            return Err(format!("a coefficient id is past the {coefficients} coefficients"));
        }
        Ok(())
    }

    #[cfg(test)]
    pub(super) fn columns_mut(&mut self) -> &mut [u32] {
        &mut self.columns
    }

    pub fn num_rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    pub fn num_nonzeros(&self) -> usize {
        self.columns.len()
    }

    pub fn row_starts(&self) -> &[u32] {
        &self.row_starts
    }

    pub fn columns(&self) -> &[u32] {
        &self.columns
    }

    pub fn coefficient_ids(&self) -> &[u32] {
        &self.coefficient_ids
    }

    pub fn size_bytes(&self) -> usize {
        4 * (self.row_starts.len() + self.columns.len() + self.coefficient_ids.len())
    }

    /// Row `row` of the product with z, the coefficients looked up in `coefficients`.
    #[inline]
    pub fn row_dot(&self, row: usize, coefficients: &[Scalar], z: Assignment<'_>) -> Scalar {
        let entries = self.row_starts[row] as usize..self.row_starts[row + 1] as usize;
        let mut acc = Scalar::ZERO;
        for (&column, &id) in self.columns[entries.clone()].iter().zip(&self.coefficient_ids[entries]) {
            let value = z.get(column);
            match id {
                ONE => acc += value,
                MINUS_ONE => acc -= value,
                _ => acc += value * coefficients[id as usize],
            }
        }
        acc
    }
}
