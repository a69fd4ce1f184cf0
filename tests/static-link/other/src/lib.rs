//! Exports one C function that needs blst and Rust's standard library, so that both are in the
//! archive the way they are in libfilcrypto.a.

/// 1 when the compressed BLS12-381 G1 generator decodes (through blst), else 0.
#[no_mangle]
pub extern "C" fn other_g1_generator_decodes() -> i32 {
    // SAFETY: blst_p1_generator returns a pointer to a static point; the buffers are locals.
    let decoded = unsafe {
        let mut compressed = [0u8; 48];
        blst::blst_p1_compress(compressed.as_mut_ptr(), blst::blst_p1_generator());
        let mut affine = blst::blst_p1_affine::default();
        blst::blst_p1_uncompress(&mut affine, compressed.as_ptr()) == blst::BLST_ERROR::BLST_SUCCESS
    };
    let message = format!("{decoded}");
    i32::from(message == "true")
}
