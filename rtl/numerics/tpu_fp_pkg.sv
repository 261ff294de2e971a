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
