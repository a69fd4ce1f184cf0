// The BLS12-381 types every stage shares, from sppark's field and curve templates.
#pragma once

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

// G2 (B_G2): the same templates over Fp2.
typedef jacobian_t<fp2_t> g2_point_t;
typedef xyzz_t<fp2_t> g2_bucket_t;
typedef g2_bucket_t::affine_t g2_affine_t;

#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>
#include <msm/batch_addition.cuh>
#include <ntt/ntt.cuh>

// Rust hands us blst's types; sppark's must have the same size and layout.
static_assert(sizeof(fr_t) == 32, "fr_t is blst_fr");
static_assert(sizeof(affine_t) == 96, "affine_t is blst_p1_affine");
#ifndef __CUDA_ARCH__ // on the device an Fp2 element is spread over two threads
static_assert(sizeof(g2_affine_t) == 192, "g2_affine_t is blst_p2_affine");
#endif

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> g1_msm_t;
typedef msm_t<g2_bucket_t, g2_point_t, g2_affine_t, scalar_t> g2_msm_t;
