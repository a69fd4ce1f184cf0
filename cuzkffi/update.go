package cuzkffi

import (
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/ipfs/go-cid"
)

// UpdateRequest is one sector of GenerateUpdateProofBatch: the arguments of
// GenerateUpdateProofWithVanilla.
type UpdateRequest struct {
	ProofType     abi.RegisteredUpdateProof
	OldSealedCID  cid.Cid // the CC sector's sealed CID (comm_r_old)
	NewSealedCID  cid.Cid // the updated replica's (comm_r_new)
	UnsealedCID   cid.Cid // the new data's (comm_d_new)
	VanillaProofs [][]byte
}
