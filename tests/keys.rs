//! Proving keys read from a params file, decoded by our parallel reader, against bellperson's
//! own reader; truncated and corrupt files refused.

use std::io::ErrorKind;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk::error::Status;
use cuzk_tools::params_file::open_key_bytes;

#[test]
fn parallel_decoding_equals_bellperson_and_rejects_corrupt_files() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let circuit = cuzk_tools::circuits::RandomCircuit::new(&mut rng, 300, true);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let key = open_key_bytes(&bytes, "good").unwrap();
    assert!(key.vk == params.vk);
    let ours = key.host_points(&pool, &mut 0).unwrap();
    assert!(*ours == Parameters::<Bls12>::read(&bytes[..], false).unwrap());
    assert!(*ours == params);

    assert_eq!(
        open_key_bytes(&bytes[..bytes.len() - 1], "truncated").err().unwrap().kind(),
        ErrorKind::UnexpectedEof
    );
    // The last byte of the last G2 point's y: no longer on the curve. Found when the points
    // are read.
    let mut corrupt = bytes.clone();
    *corrupt.last_mut().unwrap() ^= 1;
    let e = open_key_bytes(&corrupt, "corrupt").unwrap().host_points(&pool, &mut 0).err().unwrap();
    assert_eq!(e.status, Status::ParametersInvalid);
    assert!(
        e.message.contains("of query b_g2 is not an uncompressed point on its curve"),
        "{}",
        e.message
    );
}

/// Every encoding the device's decode refuses (cuda/key_decode.cuh) is refused by the host's
/// reader too, named by query and index: in L (G1) and in B_G2.
#[test]
fn the_host_reader_refuses_flagged_noncanonical_and_off_curve_points() {
    use cuzk_tools::params_file::{point_offset, refused_g1_encodings, refused_g2_encodings};
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let circuit = cuzk_tools::circuits::RandomCircuit::new(&mut rng, 40, false);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let cases = [
        (1, 1, "l", params.l[1].to_uncompressed().to_vec(), refused_g1_encodings(&params.l[1])),
        (
            4,
            0,
            "b_g2",
            params.b_g2[0].to_uncompressed().to_vec(),
            refused_g2_encodings(&params.b_g2[0]),
        ),
    ];
    for (query, index, name, valid, refused) in cases {
        let at = point_offset(&params, query, index);
        assert_eq!(bytes[at..at + valid.len()], valid, "point {index} of {name} is where point_offset says");
        for (what, encoding) in refused {
            let mut corrupt = bytes.clone();
            corrupt[at..at + encoding.len()].copy_from_slice(&encoding);
            let e = open_key_bytes(&corrupt, "refused").unwrap().host_points(&pool, &mut 0).err().unwrap();
            assert_eq!(e.status, Status::ParametersInvalid, "{what}");
            assert!(
                e.message.contains(&format!("point {index} of query {name} is not an uncompressed point")),
                "{what}: {}",
                e.message
            );
        }
    }
}
