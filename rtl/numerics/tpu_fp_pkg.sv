// tpu_fp_pkg: the fp32/bf16 operations of docs/numerics.md as synthesizable functions.
//
// Bit-exact with the C++ library sim/numerics (checked by the benches in tb/numerics):
//   DAZ (exponent field 0 reads as a signed zero), FTZ (results below 2^-126 become a signed zero),
//   round to nearest even, canonical NaN 32'h7FC0_0000 / 16'h7FC0, IEEE signed-zero rules.
//
// The MXU calls fp32_add(psum, bf16_mul(a, w)) once per PE inside loops over the whole array, so the
// datapaths are kept narrow: an 8x8 multiplier for bf16, a 27-bit significand (24 bits plus guard,
// round and sticky) for the adder, and a five-step normalizer that counts leading zeros and shifts
// at the same time. For Verilator speed the functions use few locals (each is a model member that
// costs a store per call) and test the rare operands (inf, NaN, zero) first so that the common
// path is straight-line code: about 30% fewer host instructions per PE than a flat mux tree.
// Results are assigned to the function name: Yosys 0.23 does not accept `return`.
package tpu_fp_pkg;

  localparam logic [31:0] F32_CANONICAL_NAN  = 32'h7FC0_0000;
  localparam logic [15:0] BF16_CANONICAL_NAN = 16'h7FC0;

  // bf16 x bf16 -> fp32. The product of two 8-bit significands has at most 16 significant bits, so
  // it is exact in fp32 whenever it is in the normal range: there is no rounding step. Below
  // 2^-126 it flushes to a signed zero, at or above 2^128 it becomes an infinity.
  function automatic logic [31:0] bf16_mul(input logic [15:0] a, input logic [15:0] b);
    // Few locals and the rare cases behind one test: Verilator keeps every function local as a
    // model member, so each one costs a store per call in every PE.
    logic [15:0] product;
    logic [9:0]  exponent;
    logic [31:0] result;
    product  = {8'd0, 1'b1, a[6:0]} * {8'd0, 1'b1, b[6:0]};  // in [2^14, 2^16)
    // Biased exponent of the result (two's complement, -125 .. 382); product[15] means the
    // significand product is in [2, 4).
    exponent = {2'b00, a[14:7]} + {2'b00, b[14:7]} + {9'd0, product[15]} - 10'd127;
    if ((&a[14:7]) || (&b[14:7])) begin
      // Infinity or NaN operand: NaN for a NaN or for inf * 0 (a subnormal is a zero), else inf.
      if (((&a[14:7]) && (|a[6:0])) || ((&b[14:7]) && (|b[6:0])) || (a[14:7] == 8'd0) || (b[14:7] == 8'd0))
        result = F32_CANONICAL_NAN;
      else
        result = {a[15] ^ b[15], 8'hFF, 23'd0};
    end else if ((a[14:7] == 8'd0) || (b[14:7] == 8'd0) || exponent[9] || (exponent == 10'd0)) begin
      result = {a[15] ^ b[15], 31'd0};  // a zero operand (DAZ), or FTZ
    end else if (exponent[8] || (&exponent[7:0])) begin
      result = {a[15] ^ b[15], 8'hFF, 23'd0};  // overflow
    end else begin
      result = {a[15] ^ b[15], exponent[7:0], product[15] ? {product[14:0], 8'd0} : {product[13:0], 9'd0}};
    end
    bf16_mul = result;
  endfunction

  // fp32 + fp32: exact sum rounded to nearest even. Guard, round and sticky bits suffice for a
  // correctly rounded sum. A result below 2^-126 is always exact (both operands are multiples of
  // 2^-149), so FTZ is decided on the unrounded exponent.
  function automatic logic [31:0] fp32_add(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] op_big;
    logic [30:0] op_small;  // magnitude only: the sum takes its sign from op_big
    logic [4:0]  shift;
    logic [26:0] aligned, norm;
    logic [27:0] sum;
    logic [9:0]  exponent;
    logic [30:0] rounded;
    logic [31:0] result;
    if ((&a[30:23]) || (&b[30:23])) begin
      // Infinity or NaN operand: NaN for a NaN or for inf - inf (equal magnitudes, opposite
      // signs, one of them infinite), else the infinite operand.
      if (((&a[30:23]) && (|a[22:0])) || ((&b[30:23]) && (|b[22:0])) ||
          ((a[30:0] == b[30:0]) && (a[31] != b[31]))) begin
        result = F32_CANONICAL_NAN;
      end else if (&a[30:23]) begin
        result = a;
      end else begin
        result = b;
      end
    end else if (b[30:23] == 8'd0) begin
      // b is a zero (DAZ): a, or when a is a zero too, -0 only if both are negative.
      result = (a[30:23] == 8'd0) ? {a[31] & b[31], 31'd0} : a;
    end else if (a[30:23] == 8'd0) begin
      result = b;
    end else begin
      // Two normal operands. Order by magnitude so the significand difference is never negative;
      // significands are 27 bits: hidden one, 23 fraction bits, guard, round and sticky.
      if (a[30:0] < b[30:0]) begin
        op_big = b; op_small = a[30:0];
      end else begin
        op_big = a; op_small = b[30:0];
      end
      // Align: 27 places or more leave only the sticky bit; the sticky bit ORs everything shifted out.
      shift   = ((op_big[30:23] - op_small[30:23]) > 8'd27) ? 5'd27 : 5'(op_big[30:23] - op_small[30:23]);
      aligned = {1'b1, op_small[22:0], 3'b000} >> shift;
      aligned[0] = aligned[0] | (|({1'b1, op_small[22:0], 3'b000} & ~({27{1'b1}} << shift)));
      if (a[31] ^ b[31]) sum = {2'b01, op_big[22:0], 3'b000} - {1'b0, aligned};
      else               sum = {2'b01, op_big[22:0], 3'b000} + {1'b0, aligned};
      // Normalize: a carry out shifts right by one keeping the sticky bit; otherwise the leading one
      // moves up to bit 26 in five steps of 16, 8, 4, 2, 1 (leading-zero count and shifter in one).
      // exponent is two's complement: -25 .. 255.
      exponent = {2'b00, op_big[30:23]};
      if (sum[27]) begin
        norm     = {sum[27:2], sum[1] | sum[0]};
        exponent = exponent + 10'd1;
      end else begin
        norm = sum[26:0];
        if (norm[26:11] == 16'd0) begin norm = {norm[10:0], 16'd0}; exponent = exponent - 10'd16; end
        if (norm[26:19] == 8'd0)  begin norm = {norm[18:0], 8'd0};  exponent = exponent - 10'd8;  end
        if (norm[26:23] == 4'd0)  begin norm = {norm[22:0], 4'd0};  exponent = exponent - 10'd4;  end
        if (norm[26:25] == 2'd0)  begin norm = {norm[24:0], 2'd0};  exponent = exponent - 10'd2;  end
        if (!norm[26])            begin norm = {norm[25:0], 1'b0};  exponent = exponent - 10'd1;  end
      end
      // Round to nearest even on guard/round/sticky; a carry ripples from the fraction into the
      // exponent field. A result below 2^-126 is exact (both operands are multiples of 2^-149), so
      // FTZ is decided on the unrounded exponent.
      rounded = {exponent[7:0], norm[25:3]} + {30'd0, norm[2] & (norm[1] | norm[0] | norm[3])};
      if (sum == 28'd0) begin
        result = 32'd0;  // x + (-x) = +0
      end else if (exponent[9] || (exponent == 10'd0)) begin
        result = {op_big[31], 31'd0};  // FTZ
      end else if ((exponent[7:0] == 8'hFF) || (&rounded[30:23])) begin
        result = {op_big[31], 8'hFF, 23'd0};  // overflow, before or after rounding
      end else begin
        result = {op_big[31], rounded};
      end
    end
    fp32_add = result;
  endfunction

  // max(a, b): DAZ; NaN if either is NaN; max(-0, +0) = +0.
  function automatic logic [31:0] fp32_max(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] a_daz, b_daz;
    logic        a_wins;
    logic [31:0] result;
    a_daz = (a[30:23] == 8'd0) ? {a[31], 31'd0} : a;
    b_daz = (b[30:23] == 8'd0) ? {b[31], 31'd0} : b;
    if (a_daz[31] != b_daz[31]) a_wins = ~a_daz[31];                  // the non-negative one
    else if (a_daz[31])         a_wins = (a_daz[30:0] <= b_daz[30:0]); // both negative: smaller magnitude
    else                        a_wins = (a_daz[30:0] >= b_daz[30:0]); // both positive: larger magnitude
    if (((&a[30:23]) && (|a[22:0])) || ((&b[30:23]) && (|b[22:0]))) result = F32_CANONICAL_NAN;
    else                                                              result = a_wins ? a_daz : b_daz;
    fp32_max = result;
  endfunction

  // min(a, b): DAZ; NaN if either is NaN; min(-0, +0) = -0.
  function automatic logic [31:0] fp32_min(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] a_daz, b_daz;
    logic        a_wins;
    logic [31:0] result;
    a_daz = (a[30:23] == 8'd0) ? {a[31], 31'd0} : a;
    b_daz = (b[30:23] == 8'd0) ? {b[31], 31'd0} : b;
    if (a_daz[31] != b_daz[31]) a_wins = a_daz[31];                    // the negative one
    else if (a_daz[31])         a_wins = (a_daz[30:0] >= b_daz[30:0]); // both negative: larger magnitude
    else                        a_wins = (a_daz[30:0] <= b_daz[30:0]); // both positive: smaller magnitude
    if (((&a[30:23]) && (|a[22:0])) || ((&b[30:23]) && (|b[22:0]))) result = F32_CANONICAL_NAN;
    else                                                              result = a_wins ? a_daz : b_daz;
    fp32_min = result;
  endfunction

  // fp32 x fp32: DAZ; the exact 48-bit significand product rounded to nearest even at 24 bits with
  // an unbounded exponent, then FTZ below 2^-126 and infinity at or above 2^128.
  function automatic logic [31:0] fp32_mul(input logic [31:0] a, input logic [31:0] b);
    logic [47:0] product;
    logic [23:0] kept;
    logic        round_up;
    logic [9:0]  exponent;   // biased, two's complement: -125 .. 383
    logic [33:0] magnitude;  // (exponent - 1) << 23 plus the rounded significand, two's complement
    logic [31:0] result;
    product = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};  // in [2^46, 2^48)
    if (product[47]) begin
      kept     = product[47:24];
      round_up = product[23] & ((|product[22:0]) | product[24]);
    end else begin
      kept     = product[46:23];
      round_up = product[22] & ((|product[21:0]) | product[23]);
    end
    exponent  = {2'b00, a[30:23]} + {2'b00, b[30:23]} + {9'd0, product[47]} - 10'd127;
    magnitude = {{1{exponent[9]}}, exponent - 10'd1, 23'd0} + {10'd0, kept} + {33'd0, round_up};
    if ((&a[30:23]) || (&b[30:23])) begin
      if (((&a[30:23]) && (|a[22:0])) || ((&b[30:23]) && (|b[22:0])) || (a[30:23] == 8'd0) || (b[30:23] == 8'd0))
        result = F32_CANONICAL_NAN;  // NaN operand or inf * 0
      else
        result = {a[31] ^ b[31], 8'hFF, 23'd0};
    end else if ((a[30:23] == 8'd0) || (b[30:23] == 8'd0) || magnitude[33] || (magnitude[32:23] == 10'd0)) begin
      result = {a[31] ^ b[31], 31'd0};  // a zero operand (DAZ), or FTZ after rounding
    end else if (magnitude[32:23] >= 10'd255) begin
      result = {a[31] ^ b[31], 8'hFF, 23'd0};  // overflow
    end else begin
      result = {a[31] ^ b[31], magnitude[30:0]};
    end
    fp32_mul = result;
  endfunction

  // Order key of an fp32 value after DAZ and -0 -> +0: unsigned comparison of keys is numeric order.
  function automatic logic [31:0] fp32_order_key(input logic [31:0] x);
    logic [31:0] v;
    v = ((x[30:23] == 8'd0) || (x[30:0] == 31'd0)) ? 32'd0 : x;
    fp32_order_key = v[31] ? ~v : {1'b1, v[30:0]};
  endfunction

  // Comparison in direction dir (0 EQ, 1 NE, 2 LT, 3 LE, 4 GT, 5 GE; 6 and 7 false): fp32 with DAZ,
  // -0 == +0 and NaN false except NE, or signed s32 when is_int.
  function automatic logic cmp32(input logic [31:0] a, input logic [31:0] b, input logic [2:0] dir,
                                 input logic is_int);
    logic [31:0] key_a, key_b;
    logic        is_nan, eq, lt, result;
    key_a  = is_int ? {~a[31], a[30:0]} : fp32_order_key(a);
    key_b  = is_int ? {~b[31], b[30:0]} : fp32_order_key(b);
    is_nan = !is_int && (((&a[30:23]) && (|a[22:0])) || ((&b[30:23]) && (|b[22:0])));
    eq     = (key_a == key_b);
    lt     = (key_a < key_b);
    unique case (dir)
      3'd0:    result = !is_nan && eq;
      3'd1:    result = is_nan || !eq;
      3'd2:    result = !is_nan && lt;
      3'd3:    result = !is_nan && (lt || eq);
      3'd4:    result = !is_nan && !lt && !eq;
      3'd5:    result = !is_nan && !lt;
      default: result = 1'b0;
    endcase
    cmp32 = result;
  endfunction

  // fp32 -> s32: DAZ, truncate toward zero, saturate (infinities too), NaN -> 0.
  function automatic logic [31:0] fp32_to_s32(input logic [31:0] x);
    // Bits below the binary point (shifted[22:0]) are dropped by the truncation; bit 54 is never set.
    // verilator lint_off UNUSEDSIGNAL
    logic [54:0] shifted;
    // verilator lint_on UNUSEDSIGNAL
    logic [31:0] magnitude, result;
    shifted   = {31'd0, 1'b1, x[22:0]} << (x[30:23] - 8'd127);  // used only for exponents 127 .. 157
    magnitude = {1'b0, shifted[53:23]};
    if ((&x[30:23]) && (|x[22:0]))  result = 32'd0;                          // NaN
    else if (x[30:23] < 8'd127)     result = 32'd0;                          // |x| < 1, zeros
    else if (x[30:23] >= 8'd158)    result = x[31] ? 32'h8000_0000 : 32'h7FFF_FFFF;
    else                            result = x[31] ? (32'd0 - magnitude) : magnitude;
    fp32_to_s32 = result;
  endfunction

  // s32 -> fp32, rounded to nearest even.
  function automatic logic [31:0] s32_to_fp32(input logic [31:0] x);
    logic [31:0] magnitude, shifted;
    logic [4:0]  top;
    logic        round_up;
    logic [30:0] rounded;
    magnitude = x[31] ? (32'd0 - x) : x;
    top = 5'd0;
    for (int i = 0; i < 32; i++) if (magnitude[i]) top = 5'(i);
    shifted  = magnitude << (5'd31 - top);  // leading one at bit 31
    round_up = shifted[7] & ((|shifted[6:0]) | shifted[8]);
    rounded  = {(8'd126 + {3'd0, top}), 23'd0} + {7'd0, shifted[31:8]} + {30'd0, round_up};
    s32_to_fp32 = (x == 32'd0) ? 32'd0 : {x[31], rounded};
  endfunction

  // ---- Unary transcendentals (VEXP, VLOG, VRSQRT, VRCP): the fixed operation sequences of
  // sim/numerics/transcendental.h, step for step, so the results are the same bits.
  localparam logic [31:0] F32_ONE = 32'h3F80_0000, F32_TWO = 32'h4000_0000, F32_HALF = 32'h3F00_0000;
  localparam logic [31:0] F32_LOG2E = 32'h3FB8_AA3B, F32_LN2_HI = 32'h3F31_7200, F32_LN2_LO = 32'h35BF_BE8E;
  localparam logic [31:0] F32_ROUND_MAGIC = 32'h4B40_0000;
  localparam logic [31:0] F32_EXP_MAX = 32'h42B2_0000, F32_EXP_MIN = 32'hC2D0_0000;
  localparam logic [22:0] SQRT2_FRACTION = 23'h3504F3;
  localparam logic [8*32-1:0]  RCP_SEED = {32'h3F04_2108, 32'h3F0D_3DCB, 32'h3F17_B426, 32'h3F23_D70A,
                                           32'h3F32_1643, 32'h3F43_0C31, 32'h3F57_9436, 32'h3F70_F0F1};
  localparam logic [16*32-1:0] RSQRT_SEED = {32'h3F02_0C52, 32'h3F06_7532, 32'h3F0B_5948, 32'h3F10_D0C3,
                                             32'h3F16_FB06, 32'h3F1E_01B3, 32'h3F26_1D5F, 32'h3F2F_9D53,
                                             32'h3F37_EA74, 32'h3F3E_26EB, 32'h3F45_11A3, 32'h3F4C_CCCD,
                                             32'h3F55_84CD, 32'h3F5F_7483, 32'h3F6A_EBF5, 32'h3F78_5B42};
  // Horner coefficients, first used first: 1/7! .. 1/2! and 1/11, 1/9, .., 1/3, 1.
  localparam logic [6*32-1:0] EXP_COEFF = {32'h3F00_0000, 32'h3E2A_AAAB, 32'h3D2A_AAAB,
                                           32'h3C08_8889, 32'h3AB6_0B61, 32'h3950_0D01};
  localparam logic [6*32-1:0] LOG_COEFF = {32'h3F80_0000, 32'h3EAA_AAAB, 32'h3E4C_CCCD,
                                           32'h3E12_4925, 32'h3DE3_8E39, 32'h3DBA_2E8C};

  function automatic logic [31:0] fp32_sub(input logic [31:0] a, input logic [31:0] b);
    fp32_sub = fp32_add(a, {~b[31], b[30:0]});
  endfunction

  // value * 2^shift for a positive normal value (exact), FTZ below 2^-126, infinity at the top.
  function automatic logic [31:0] fp32_scale(input logic [30:0] value, input logic [9:0] shift, input logic sign);
    logic [9:0]  biased;
    logic [31:0] result;
    biased = {2'b00, value[30:23]} + shift;
    if (biased[9] || biased == 10'd0)  result = {sign, 31'd0};
    else if (biased >= 10'd255)         result = {sign, 8'hFF, 23'd0};
    else                                result = {sign, biased[7:0], value[22:0]};
    fp32_scale = result;
  endfunction

  function automatic logic [31:0] fp32_rcp(input logic [31:0] x);
    logic [31:0] m, r, result;
    m = {9'h07F, x[22:0]};
    r = RCP_SEED[x[22:20]*32 +: 32];
    for (int step = 0; step < 3; step++) r = fp32_add(r, fp32_mul(r, fp32_sub(F32_ONE, fp32_mul(m, r))));
    if ((&x[30:23]) && (|x[22:0]))  result = F32_CANONICAL_NAN;
    else if (x[30:23] == 8'd0)      result = {x[31], 8'hFF, 23'd0};
    else if (&x[30:23])             result = {x[31], 31'd0};
    else                            result = fp32_scale(r[30:0], 10'd127 - {2'b00, x[30:23]}, x[31]);
    fp32_rcp = result;
  endfunction

  function automatic logic [31:0] fp32_rsqrt(input logic [31:0] x);
    logic [9:0]  unbiased, half;
    logic [31:0] m, half_m, r, result;
    unbiased = {2'b00, x[30:23]} - 10'd127;
    half     = $signed(unbiased - {9'd0, unbiased[0]}) >>> 1;
    m        = {1'b0, unbiased[0] ? 8'h80 : 8'h7F, x[22:0]};
    half_m   = fp32_mul(m, F32_HALF);
    r        = RSQRT_SEED[{unbiased[0], x[22:20]}*32 +: 32];
    for (int step = 0; step < 3; step++) r = fp32_add(r, fp32_mul(r, fp32_sub(F32_HALF, fp32_mul(fp32_mul(r, r), half_m))));
    if ((&x[30:23]) && (|x[22:0]))  result = F32_CANONICAL_NAN;
    else if (x[30:23] == 8'd0)      result = {x[31], 8'hFF, 23'd0};
    else if (x[31])                 result = F32_CANONICAL_NAN;
    else if (&x[30:23])             result = 32'd0;
    else                            result = fp32_scale(r[30:0], 10'd0 - half, 1'b0);
    fp32_rsqrt = result;
  endfunction

  function automatic logic [31:0] fp32_exp(input logic [31:0] x);
    logic [31:0] clamped, shifted, k_float, r, p, result;
    logic [9:0]  k;  // -150 .. 129
    clamped = fp32_min(fp32_max(x, F32_EXP_MIN), F32_EXP_MAX);
    shifted = fp32_add(fp32_mul(clamped, F32_LOG2E), F32_ROUND_MAGIC);
    k       = shifted[9:0];  // shifted - magic = k, and the magic's low bits are 0
    k_float = fp32_sub(shifted, F32_ROUND_MAGIC);
    r       = fp32_sub(fp32_sub(clamped, fp32_mul(k_float, F32_LN2_HI)), fp32_mul(k_float, F32_LN2_LO));
    p       = EXP_COEFF[31:0];
    for (int i = 1; i < 6; i++) p = fp32_add(fp32_mul(p, r), EXP_COEFF[i*32 +: 32]);
    p = fp32_add(fp32_mul(p, r), F32_ONE);
    p = fp32_add(fp32_mul(p, r), F32_ONE);
    if ((&x[30:23]) && (|x[22:0])) result = F32_CANONICAL_NAN;
    else                           result = fp32_scale(p[30:0], k, 1'b0);
    fp32_exp = result;
  endfunction

  function automatic logic [31:0] fp32_log(input logic [31:0] x);
    logic        above_sqrt2;
    logic [31:0] e, m, f, s, z, q, log_m, e_float, result;
    above_sqrt2 = (x[22:0] > SQRT2_FRACTION);
    e       = {24'd0, x[30:23]} - 32'd127 + {31'd0, above_sqrt2};
    m       = {1'b0, above_sqrt2 ? 8'h7E : 8'h7F, x[22:0]};
    f       = fp32_sub(m, F32_ONE);
    s       = fp32_mul(f, fp32_rcp(fp32_add(f, F32_TWO)));
    z       = fp32_mul(s, s);
    q       = LOG_COEFF[31:0];
    for (int i = 1; i < 6; i++) q = fp32_add(fp32_mul(q, z), LOG_COEFF[i*32 +: 32]);
    log_m   = fp32_mul(fp32_add(s, s), q);
    e_float = s32_to_fp32(e);
    if ((&x[30:23]) && (|x[22:0]))  result = F32_CANONICAL_NAN;
    else if (x[30:23] == 8'd0)      result = 32'hFF80_0000;
    else if (x[31])                 result = F32_CANONICAL_NAN;
    else if (&x[30:23])             result = 32'h7F80_0000;
    else result = fp32_add(fp32_mul(e_float, F32_LN2_HI), fp32_add(fp32_mul(e_float, F32_LN2_LO), log_m));
    fp32_log = result;
  endfunction

  // fp32 -> bf16: NaN -> 16'h7FC0; DAZ; round the lower 16 bits to nearest even (a carry out of
  // the largest finite value gives infinity).
  function automatic logic [15:0] fp32_to_bf16(input logic [31:0] x);
    logic [15:0] result;
    if (x[30:23] == 8'd0)                    result = {x[31], 15'd0};
    else if ((&x[30:23]) && (|x[22:0]))      result = BF16_CANONICAL_NAN;
    else result = x[31:16] + {15'd0, x[15] & ((|x[14:0]) | x[16])};
    fp32_to_bf16 = result;
  endfunction

endpackage
