// Package engine is cuzk's Go API for gnark users: Groth16 on BLS12-381 with
// cuzk's staged prover, on the CPU or on GPUs, returning gnark's own proof
// types, which gnark's verifier accepts.
//
// A circuit comes as a gnark frontend.Circuit (Compile) or an already
// compiled constraint.ConstraintSystem. Keys are made by Setup (cuzk's key
// generation, or gnark's with WithKeygen("gnark")), wrapped from gnark's
// objects (NewKeys), or read from a key directory cuzk wrote (LoadKeys) or
// from gnark's serialized files (LoadGnarkKeys). Prove proves one witness;
// ProveAll proves a job, one witness per partition, through the same actors,
// lock design and runner as cuzk prove and the daemon.
//
//	ccs, _ := engine.Compile(&myCircuit{})
//	keys, _ := engine.Setup(ctx, ccs)
//	proof, _ := engine.Prove(ctx, keys, witness, engine.WithHints(myHint))
//	err := engine.Verify(keys, proof, publicWitness)
//
// Circuits with gnark's commitments (api.Commit, and the std gadgets built
// on it: rangecheck, lookups, sha2, emulated arithmetic) are proved as
// gnark proves them. Hints not in gnark's registry are given with WithHints
// (gnark's solver.WithHints); a missing one is an error naming it. See
// docs/gnark-circuits.md for the gadgets tested and the limits.
package engine
