//! The parallel decoder of bellperson's params format against bellperson's own reader.

use std::io::ErrorKind;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk::internals::decode_parameters;

#[test]
fn parallel_decoding_equals_bellperson_and_rejects_corrupt_files() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let circuit = cuzk_tools::circuits::RandomCircuit::new(&mut rng, 300, true);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let ours = decode_parameters(&bytes).unwrap();
    assert!(ours == Parameters::<Bls12>::read(&bytes[..], false).unwrap());
    assert!(ours == params);

    assert_eq!(
        decode_parameters(&bytes[..bytes.len() - 1]).err().unwrap().kind(),
        ErrorKind::UnexpectedEof
    );
    // The last byte of the last G2 point's y: no longer on the curve.
    let mut corrupt = bytes.clone();
    *corrupt.last_mut().unwrap() ^= 1;
    assert_eq!(decode_parameters(&corrupt).err().unwrap().kind(), ErrorKind::InvalidData);
}
