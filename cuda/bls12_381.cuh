// The BLS12-381 types every stage shares, from sppark's field and curve templates.
#pragma once

#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>
#include <msm/batch_addition.cuh>
#include <ntt/ntt.cuh>

// Rust hands us blst's types; sppark's must have the same size and layout.
static_assert(sizeof(fr_t) == 32, "fr_t is blst_fr");
static_assert(sizeof(affine_t) == 96, "affine_t is blst_p1_affine");

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> g1_msm_t;
