//! Proving keys read from a params file, decoded by our parallel reader, against bellperson's
//! own reader; truncated and corrupt files refused.

use std::io::ErrorKind;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk::error::Status;
use cuzk::ProvingKey;

fn open(bytes: &[u8], name: &str) -> std::io::Result<ProvingKey> {
    let path = std::env::temp_dir().join(format!("cuzk-keys-test-{name}-{}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let key = ProvingKey::open(std::fs::File::open(&path).unwrap(), path.display().to_string());
    // The key keeps the file open: its points are read after the name is gone.
    std::fs::remove_file(&path).unwrap();
    key
}

#[test]
fn parallel_decoding_equals_bellperson_and_rejects_corrupt_files() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let circuit = cuzk_tools::circuits::RandomCircuit::new(&mut rng, 300, true);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let key = open(&bytes, "good").unwrap();
    assert!(key.vk == params.vk);
    let ours = key.host_points(&pool, &mut 0).unwrap();
    assert!(*ours == Parameters::<Bls12>::read(&bytes[..], false).unwrap());
    assert!(*ours == params);

    assert_eq!(
        open(&bytes[..bytes.len() - 1], "truncated").err().unwrap().kind(),
        ErrorKind::UnexpectedEof
    );
    // The last byte of the last G2 point's y: no longer on the curve. Found when the points
    // are read.
    let mut corrupt = bytes.clone();
    *corrupt.last_mut().unwrap() ^= 1;
    let e = open(&corrupt, "corrupt").unwrap().host_points(&pool, &mut 0).err().unwrap();
    assert_eq!(e.status, Status::ParametersInvalid);
    assert!(e.message.contains("of query b_g2 is not on its curve"), "{}", e.message);
}
