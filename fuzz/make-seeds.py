#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (seeds/<target>/) from real 2KiB fixtures made by
cuzk-fixtures, in each target's input layout (see src/bin/<target>.rs):

    cuzk-fixtures seal --sector-size 2KiB --sector 7 --out SEAL
    cuzk-fixtures post --sector-size 2KiB --sectors 2 --out POST
    cuzk-fixtures update --sector-size 2KiB --out UPDATE
    ./make-seeds.py SEAL POST UPDATE
"""
import json
import pathlib
import struct
import sys

seal, post, update = map(pathlib.Path, sys.argv[1:4])
seeds = pathlib.Path(__file__).parent / "seeds"

sector = json.loads((seal / "sector.json").read_text())
c1 = (seal / "c1.json").read_bytes()
sector_id = struct.pack("<Q", sector["sector_id"])
prover_id = bytes.fromhex(sector["prover_id"])

posts = json.loads((post / "post.json").read_text())
post_prover = bytes.fromhex(posts["prover_id"])
randomness = bytes.fromhex(posts["randomness"])
window = [bytes.fromhex(p) for p in posts["window"]["partitions"][0]["vanilla_proofs"]]
winning = [bytes.fromhex(p) for p in posts["winning"]["vanilla_proofs"]]

comms = (update / "comms.bin").read_bytes()
partitions = sorted(update.glob("vanilla-*.bin"))
update_vanilla = [p.read_bytes() for p in partitions]


def chunks(items):
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def write(target, name, data):
    (seeds / target).mkdir(parents=True, exist_ok=True)
    (seeds / target / name).write_bytes(data)


write("c1", "c1", sector_id + prover_id + c1)
write("post", "window", bytes([0, 0]) + post_prover + randomness + chunks(window))
write("post", "winning", bytes([1, 0]) + post_prover + randomness + chunks(winning))
write("update", "partition-0", comms + update_vanilla[0])


# c_abi: the entry point, the NULL mask (none), the registered proof, the timings' struct_size,
# five 32-byte arguments, a number, then the entry point's own arguments.
def call(op, registered, args=(b"",) * 5, number=0, rest=b""):
    args = [a.ljust(32, b"\0") for a in args]
    return struct.pack("<BIII", op, 0, registered, 1024) + b"".join(args) + struct.pack("<Q", number) + rest


NO_OPTIONS = b"\0"
PROOF = bytes(192)
sectors = [struct.pack("<Q", s["sector_id"]) + bytes.fromhex(s["comm_r"]) for s in posts["winning"]["sectors"]]
c1_comms = (bytes.fromhex(sector["comm_r"]), bytes.fromhex(sector["comm_d"]))
seal_args = (prover_id, b"", b"", b"", b"")
post_args = (post_prover, randomness, b"", b"", b"")
update_args = (comms[:32], comms[32:64], comms[64:], b"", b"")
write("c_abi", "00-c1-info", call(0, 0, rest=struct.pack("<I", 140) + c1))
write("c_abi", "01-seal", call(1, 0, seal_args, sector["sector_id"], NO_OPTIONS + c1))
write("c_abi", "02-seal-batch", call(2, 0, seal_args, sector["sector_id"], NO_OPTIONS + chunks([c1, c1])))
verify_seal_args = (*c1_comms, prover_id, bytes.fromhex(sector["ticket"]), bytes.fromhex(sector["seed"]))
write("c_abi", "03-verify-seal", call(3, 5, verify_seal_args, sector["sector_id"], PROOF))
window_abi, winning_abi = posts["window"]["abi_proof"], posts["winning"]["abi_proof"]
write("c_abi", "04-window", call(4, window_abi, post_args, rest=NO_OPTIONS + b"\0" + chunks(window)))
write("c_abi", "05-winning", call(5, winning_abi, post_args, rest=NO_OPTIONS + b"\0" + chunks(winning)))
verify_post = bytes([len(sectors)]) + b"".join(sectors) + PROOF
write("c_abi", "06-verify-window", call(6, window_abi, post_args, rest=verify_post))
write("c_abi", "07-verify-winning", call(7, winning_abi, post_args, rest=verify_post))
write("c_abi", "08-update", call(8, 0, update_args, rest=NO_OPTIONS + b"\0" + chunks(update_vanilla)))
write("c_abi", "09-update-batch", call(9, 0, update_args, rest=NO_OPTIONS + b"\1" + chunks(update_vanilla)))
write("c_abi", "10-verify-update", call(10, 0, update_args, rest=PROOF))
write("c_abi", "11-preload", call(11, 5))
write("c_abi", "12-evict", call(12, 5))
write("c_abi", "13-status", call(13, 48))
write("c_abi", "14-log", call(14, 3, number=1))
