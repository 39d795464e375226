// A module that uses every opcode and every attribute, shared by the printer, parser and
// verifier tests. Instruction lines are in canonical printed form.
#pragma once

namespace jx::hlo::testing {

inline constexpr char kEverythingHlo[] = R"(HloModule everything

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %cmp = pred[] compare(f32[] %a, f32[] %b), direction=GE
}

%lt2 (a0: f32[], b0: f32[], a1: s32[], b1: s32[]) -> pred[] {
  %a0 = f32[] parameter(0)
  %b0 = f32[] parameter(1)
  %a1 = s32[] parameter(2)
  %b1 = s32[] parameter(3)
  ROOT %lt = pred[] compare(f32[] %a0, f32[] %b0), direction=LT, type=TOTALORDER
}

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[4]{0}) %s), index=0
  %n = s32[] constant(10)
  ROOT %less = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

%body (s.1: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s.1 = (s32[], f32[4]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element((s32[], f32[4]{0}) %s.1), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i.1, s32[] %one)
  %v = f32[4]{0} get-tuple-element((s32[], f32[4]{0}) %s.1), index=1
  %v2 = f32[4]{0} sine(f32[4]{0} %v)
  ROOT %t = (s32[], f32[4]{0}) tuple(s32[] %next, f32[4]{0} %v2)
}

%branch_a (pa: f32[4]) -> f32[4] {
  %pa = f32[4]{0} parameter(0)
  ROOT %neg = f32[4]{0} negate(f32[4]{0} %pa)
}

%branch_b (pb: f32[4]) -> f32[4] {
  %pb = f32[4]{0} parameter(0)
  ROOT %ex = f32[4]{0} exponential(f32[4]{0} %pb)
}

%callee (pc: f32[4]) -> f32[4] {
  %pc = f32[4]{0} parameter(0)
  ROOT %co = f32[4]{0} cosine(f32[4]{0} %pc)
}

%fused_computation (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %sine.1 = f32[4]{0} sine(f32[4]{0} %param_0)
  ROOT %multiply.2 = f32[4]{0} multiply(f32[4]{0} %sine.1, f32[4]{0} %sine.1)
}

%map_fn (pm: f32[]) -> f32[] {
  %pm = f32[] parameter(0)
  ROOT %th = f32[] tanh(f32[] %pm)
}

ENTRY %main (p0: f32[4], p1: f32[2,3], p2: f32[3,4], p3: s32[4], p4: u64[2], p5: f32[1,8,8,3], p6: f32[3,3,3,16], p7: s32[2,1], p8: pred[], p9: bf16[4], p10: f32[3,3,1,3], p11: f32[2,4,4,3], p12: f32[3,3,3,2]) -> (f32[4], f32[2,4]) {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[2,3]{1,0} parameter(1)
  %p2 = f32[3,4]{1,0} parameter(2)
  %p3 = s32[4]{0} parameter(3)
  %p4 = u64[2]{0} parameter(4)
  %p5 = f32[1,8,8,3]{3,2,1,0} parameter(5)
  %p6 = f32[3,3,3,16]{3,2,1,0} parameter(6)
  %p7 = s32[2,1]{1,0} parameter(7)
  %p8 = pred[] parameter(8)
  %p9 = bf16[4]{0} parameter(9)
  %p10 = f32[3,3,1,3]{3,2,1,0} parameter(10)
  %p11 = f32[2,4,4,3]{3,2,1,0} parameter(11)
  %p12 = f32[3,3,3,2]{3,2,1,0} parameter(12)
  %c0 = f32[] constant(0)
  %c1 = f32[4]{0} constant({1, 2.5, -3, inf})
  %c2 = s32[2,2]{1,0} constant({{1, 2}, {3, 4}})
  %c3 = pred[2]{0} constant({true, false})
  %c4 = s32[] constant(1)
  %io = s32[4]{0} iota(), iota_dimension=0
  %e_abs = f32[4]{0} abs(f32[4]{0} %p0)
  %e_cbrt = f32[4]{0} cbrt(f32[4]{0} %p0)
  %e_ceil = f32[4]{0} ceil(f32[4]{0} %p0)
  %e_clz = s32[4]{0} count-leading-zeros(s32[4]{0} %p3)
  %e_cos = f32[4]{0} cosine(f32[4]{0} %p0)
  %e_erf = f32[4]{0} erf(f32[4]{0} %p0)
  %e_exp = f32[4]{0} exponential(f32[4]{0} %p0)
  %e_expm1 = f32[4]{0} exponential-minus-one(f32[4]{0} %p0)
  %e_floor = f32[4]{0} floor(f32[4]{0} %p0)
  %e_fin = pred[4]{0} is-finite(f32[4]{0} %p0)
  %e_log = f32[4]{0} log(f32[4]{0} %p0)
  %e_log1p = f32[4]{0} log-plus-one(f32[4]{0} %p0)
  %e_logistic = f32[4]{0} logistic(f32[4]{0} %p0)
  %e_neg = f32[4]{0} negate(f32[4]{0} %p0)
  %e_not = pred[] not(pred[] %p8)
  %e_popcnt = s32[4]{0} popcnt(s32[4]{0} %p3)
  %e_rafz = f32[4]{0} round-nearest-afz(f32[4]{0} %p0)
  %e_reven = f32[4]{0} round-nearest-even(f32[4]{0} %p0)
  %e_rsqrt = f32[4]{0} rsqrt(f32[4]{0} %p0)
  %e_sign = f32[4]{0} sign(f32[4]{0} %p0)
  %e_sin = f32[4]{0} sine(f32[4]{0} %p0)
  %e_sqrt = f32[4]{0} sqrt(f32[4]{0} %p0)
  %e_tan = f32[4]{0} tan(f32[4]{0} %p0)
  %e_tanh = f32[4]{0} tanh(f32[4]{0} %p0)
  %e_copy = f32[4]{0} copy(f32[4]{0} %p0)
  %e_convert = f32[4]{0} convert(bf16[4]{0} %p9)
  %e_bcc = u32[4]{0} bitcast-convert(f32[4]{0} %p0)
  %e_rp = f32[4]{0} reduce-precision(f32[4]{0} %p0), exponent_bits=8, mantissa_bits=7
  %e_add = f32[4]{0} add(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_and = s32[4]{0} and(s32[4]{0} %p3, s32[4]{0} %io)
  %e_atan2 = f32[4]{0} atan2(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_cmp = pred[4]{0} compare(f32[4]{0} %p0, f32[4]{0} %c1), direction=NE
  %e_div = f32[4]{0} divide(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_max = f32[4]{0} maximum(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_min = f32[4]{0} minimum(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_mul = f32[4]{0} multiply(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_or = s32[4]{0} or(s32[4]{0} %p3, s32[4]{0} %io)
  %e_pow = f32[4]{0} power(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_rem = f32[4]{0} remainder(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_shl = s32[4]{0} shift-left(s32[4]{0} %p3, s32[4]{0} %io)
  %e_sra = s32[4]{0} shift-right-arithmetic(s32[4]{0} %p3, s32[4]{0} %io)
  %e_srl = s32[4]{0} shift-right-logical(s32[4]{0} %p3, s32[4]{0} %io)
  %e_sub = f32[4]{0} subtract(f32[4]{0} %p0, f32[4]{0} %c1)
  %e_xor = s32[4]{0} xor(s32[4]{0} %p3, s32[4]{0} %io)
  %e_clamp = f32[4]{0} clamp(f32[] %c0, f32[4]{0} %p0, f32[] %c0)
  %e_select = f32[4]{0} select(pred[4]{0} %e_cmp, f32[4]{0} %p0, f32[4]{0} %c1)
  %e_bitcast = f32[2,2]{1,0} bitcast(f32[4]{0} %p0)
  %e_slice = f32[3]{0} slice(f32[4]{0} %p0), slice={[0:3]}
  %e_slice2 = f32[2]{0} slice(f32[4]{0} %p0), slice={[0:4:2]}
  %e_bcast = f32[2,3]{1,0} broadcast(f32[3]{0} %e_slice), dimensions={1}
  %e_bscalar = f32[4]{0} broadcast(f32[] %c0), dimensions={}
  %e_concat = f32[8]{0} concatenate(f32[4]{0} %p0, f32[4]{0} %c1), dimensions={0}
  %e_ds = f32[2]{0} dynamic-slice(f32[4]{0} %p0, s32[] %c4), dynamic_slice_sizes={2}
  %e_dus = f32[4]{0} dynamic-update-slice(f32[4]{0} %p0, f32[2]{0} %e_ds, s32[] %c4)
  %e_gather = f32[2,1]{1,0} gather(f32[4]{0} %p0, s32[2,1]{1,0} %p7), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  %e_pad = f32[9]{0} pad(f32[4]{0} %p0, f32[] %c0), padding=1_1_1
  %e_pad2 = f32[3,5]{1,0} pad(f32[2,3]{1,0} %p1, f32[] %c0), padding=0_1x2_0
  %e_reshape = f32[3,2]{1,0} reshape(f32[2,3]{1,0} %p1)
  %e_rev = f32[2,3]{1,0} reverse(f32[2,3]{1,0} %p1), dimensions={0,1}
  %e_scatter = f32[4]{0} scatter(f32[4]{0} %p0, s32[2,1]{1,0} %p7, f32[2]{0} %e_ds), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
  %e_transpose = f32[3,2]{1,0} transpose(f32[2,3]{1,0} %p1), dimensions={1,0}
  %e_conv = f32[1,4,8,16]{3,2,1,0} convolution(f32[1,8,8,3]{3,2,1,0} %p5, f32[3,3,3,16]{3,2,1,0} %p6), window={size=3x3 stride=2x1 pad=2_2x2_2 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  %e_dwconv = f32[1,15,15,3]{3,2,1,0} convolution(f32[1,8,8,3]{3,2,1,0} %p5, f32[3,3,1,3]{3,2,1,0} %p10), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=3
  %e_bgconv = f32[1,4,4,2]{3,2,1,0} convolution(f32[2,4,4,3]{3,2,1,0} %p11, f32[3,3,3,2]{3,2,1,0} %p12), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, batch_group_count=2, operand_precision={high,default}
  %e_dot = f32[2,4]{1,0} dot(f32[2,3]{1,0} %p1, f32[3,4]{1,0} %p2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %e_bdot = f32[2]{0} dot(f32[2,3]{1,0} %p1, f32[2,3]{1,0} %p1), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %e_pdot = f32[2,4]{1,0} dot(f32[2,3]{1,0} %p1, f32[3,4]{1,0} %p2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  %e_tdot = f32[2,4]{1,0:T(2,128)S(1)} dot(f32[2,3]{1,0} %p1, f32[3,4]{1,0} %p2), lhs_contracting_dims={1}, rhs_contracting_dims={0}, mxu_tiling={tile=128x128, mkn=2x3x4, padded_mkn=8x128x128, batch=1, k_tiles=1, n_tiles=1, m_groups=1, mxus=1, waves=1}, vmem_tiling={grid=2x1, block=1x4, steps=2, vmem_bytes=8192, hbm_bytes=4096}
  %e_map = f32[4]{0} map(f32[4]{0} %p0), dimensions={0}, to_apply=%map_fn
  %e_reduce = f32[2]{0} reduce(f32[2,3]{1,0} %p1, f32[] %c0), dimensions={1}, to_apply=%add
  %e_rw = f32[2,2]{1,0} reduce-window(f32[2,3]{1,0} %p1, f32[] %c0), window={size=1x2}, to_apply=%add
  %e_sas = f32[2,3]{1,0} select-and-scatter(f32[2,3]{1,0} %p1, f32[2,2]{1,0} %e_rw, f32[] %c0), window={size=1x2}, select=%ge, scatter=%add
  %e_sort = (f32[4]{0}, s32[4]{0}) sort(f32[4]{0} %p0, s32[4]{0} %p3), dimensions={0}, is_stable=true, to_apply=%lt2
  %e_gte = f32[4]{0} get-tuple-element((f32[4]{0}, s32[4]{0}) %e_sort), index=0
  %e_call = f32[4]{0} call(f32[4]{0} %p0), to_apply=%callee
  %e_cond = f32[4]{0} conditional(pred[] %p8, f32[4]{0} %p0, f32[4]{0} %c1), branch_computations={%branch_a, %branch_b}
  %e_tuple = (s32[], f32[4]{0}) tuple(s32[] %c4, f32[4]{0} %p0)
  %e_while = (s32[], f32[4]{0}) while((s32[], f32[4]{0}) %e_tuple), condition=%cond, body=%body
  %e_fusion = f32[4]{0} fusion(f32[4]{0} %p0), kind=kLoop, calls=%fused_computation
  %e_cc = f32[4]{0} custom-call(f32[4]{0} %p0, s32[4]{0} %p3), custom_call_target="lgamma", custom_call_has_side_effect=true, backend_config="{\"k\": 1}"
  %e_barrier = f32[4]{0} opt-barrier(f32[4]{0} %p0)
  %e_rng = (u64[2]{0}, u32[2,2]{1,0}) rng-bit-generator(u64[2]{0} %p4), algorithm=rng_three_fry
  %e_meta = f32[4]{0} sine(f32[4]{0} %p0), metadata={op_type="sin" op_name="jit(f)/sin" source_file="f.py" source_line=12}
  %e_ar = f32[4]{0} all-reduce(f32[4]{0} %p0), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=%add
  %e_ag = f32[2,3]{1,0} all-gather(f32[2,3]{1,0} %p1), channel_id=2, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
  %e_rs = f32[4]{0} reduce-scatter(f32[4]{0} %p0), channel_id=3, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
  %e_a2a = f32[2,3]{1,0} all-to-all(f32[2,3]{1,0} %p1), channel_id=4, replica_groups={{0}}, dimensions={1}
  %e_cp = f32[4]{0} collective-permute(f32[4]{0} %p0), channel_id=5, source_target_pairs={{0,0}}
  %e_pid = u32[] partition-id()
  %e_ars = f32[4]{0} all-reduce-start(f32[4]{0} %p0), channel_id=6, replica_groups={{0}}, use_global_device_ids=true, to_apply=%add
  %e_ard = f32[4]{0} all-reduce-done(f32[4]{0} %e_ars)
  %e_ags = (f32[2,3]{1,0}, f32[2,3]{1,0}) all-gather-start(f32[2,3]{1,0} %p1), channel_id=7, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
  %e_agd = f32[2,3]{1,0} all-gather-done((f32[2,3]{1,0}, f32[2,3]{1,0}) %e_ags)
  %e_rss = ((f32[4]{0}), f32[4]{0}) reduce-scatter-start(f32[4]{0} %p0), channel_id=8, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
  %e_rsd = f32[4]{0} reduce-scatter-done(((f32[4]{0}), f32[4]{0}) %e_rss)
  %e_a2as = ((f32[2,3]{1,0}), f32[2,3]{1,0}) all-to-all-start(f32[2,3]{1,0} %p1), channel_id=9, replica_groups={{0}}, dimensions={1}
  %e_a2ad = f32[2,3]{1,0} all-to-all-done(((f32[2,3]{1,0}), f32[2,3]{1,0}) %e_a2as)
  %e_cps = (f32[4]{0}, f32[4]{0}) collective-permute-start(f32[4]{0} %p0), channel_id=10, source_target_pairs={{0,0}}
  %e_cpd = f32[4]{0} collective-permute-done((f32[4]{0}, f32[4]{0}) %e_cps)
  ROOT %e_root = (f32[4]{0}, f32[2,4]{1,0}) tuple(f32[4]{0} %e_fusion, f32[2,4]{1,0} %e_dot)
}
)";

}  // namespace jx::hlo::testing
