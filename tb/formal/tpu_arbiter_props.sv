// Formal properties of tpu_arbiter (rtl/chip/tpu_arbiter.sv), checked by tb/formal/run_bmc.sh: bounded
// model checking from reset, then k-induction with probes of the round-robin pointer and the owners
// FIFO.
//
// Three masters (as on a core's HBM port), at most two requests in flight, two-bit addresses, data and
// responses: the arbitration and routing logic is the same at every width.
//
// The masters are free: they may raise, change or withdraw a request in any cycle (an aborted unit
// withdraws its request). The port is free to stall; its one rule is the one the arbiter relies on:
// it answers every request it accepted once, in order, in a later cycle (no response without an
// outstanding request). Reset may come back at any time.
//
// Fairness is counted in grant opportunities, the cycles in which the port lets the arbiter grant
// (fewer than two requests in flight and the port's register free or being emptied): a master that
// holds its request is granted at the latest in its third opportunity (Masters of them): within three
// cycles while the port keeps every cycle an opportunity (always ready, never MaxOutstanding requests
// unanswered). Counting cycles instead would measure the port, whose stalls the arbiter cannot help.
//
// Mutations (run_bmc.sh --mutate; each one must make a property fail):
//   MUTATE_ARB_STARVE    master 2's request reaches the arbiter only while no other master requests
//   MUTATE_ARB_SPURIOUS  drops the port's rule: a response may come with no request outstanding
//   MUTATE_ARB_READY     the arbiter sees the port ready in a cycle the port did not take the request
module tpu_arbiter_props (
  input logic       clk_i,
  input logic       rst_ni,
  input logic [2:0] m_req_valid_i,
  input logic [2:0] m_req_write_i,
  input logic [5:0] m_req_addr_i,     // master m at [2m +: 2]
  input logic [5:0] m_req_wdata_i,    // master m at [2m +: 2]
  input logic       req_ready_i,
  input logic       rsp_valid_i,
  input logic [1:0] rsp_data_i,
  input logic       tag_i,            // the request the port accepts in this cycle is the tracked one
  input logic       glitch_i          // when a mutation injects its fault (free)
);

  localparam int unsigned Masters        = 3;
  localparam int unsigned MaxOutstanding = 2;
  localparam int unsigned AddrW          = 2;
  localparam int unsigned DataW          = 2;
  localparam int unsigned RspW           = 2;
  localparam int unsigned OwnerW         = 2;  // tpu_arbiter's owner index width for three masters
  localparam int unsigned ReqW           = 1 + AddrW + DataW;

  // ---------------------------------------------------------------------------------------------
  // The block, with the faults a mutation injects on its inputs.
  logic [Masters-1:0] dut_req_valid;
  logic               dut_req_ready;
`ifdef MUTATE_ARB_READY
  assign dut_req_ready = req_ready_i || glitch_i;
`else
  assign dut_req_ready = req_ready_i;
`endif
`ifdef MUTATE_ARB_STARVE
  assign dut_req_valid = {m_req_valid_i[2] && m_req_valid_i[1:0] == 2'b00, m_req_valid_i[1:0]};
`else
  assign dut_req_valid = m_req_valid_i;
`endif

  logic [Masters-1:0] m_req_ready, m_rsp_valid;
  logic [RspW-1:0]    m_rsp_data;
  logic               req_valid, req_write;
  logic [AddrW-1:0]   req_addr;
  logic [DataW-1:0]   req_wdata;

  tpu_arbiter #(
    .Masters        (Masters),
    .AddrW          (AddrW),
    .DataW          (DataW),
    .RspW           (RspW),
    .MaxOutstanding (MaxOutstanding)
  ) u_arb (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .m_req_valid_i (dut_req_valid),
    .m_req_ready_o (m_req_ready),
    .m_req_write_i (m_req_write_i),
    .m_req_addr_i  (m_req_addr_i),
    .m_req_wdata_i (m_req_wdata_i),
    .m_rsp_valid_o (m_rsp_valid),
    .m_rsp_data_o  (m_rsp_data),
    .req_valid_o   (req_valid),
    .req_ready_i   (dut_req_ready),
    .req_write_o   (req_write),
    .req_addr_o    (req_addr),
    .req_wdata_o   (req_wdata),
    .rsp_valid_i   (rsp_valid_i),
    .rsp_data_i    (rsp_data_i)
  );

  initial assume (!rst_ni);

  // The first cycle is the reset cycle: nothing is checked in it.
  logic past_valid_q = 1'b0;
  always_ff @(posedge clk_i) past_valid_q <= 1'b1;

  // ---------------------------------------------------------------------------------------------
  // Transfers and the wrapper's own bookkeeping of them.
  logic               granted, port_fire;
  logic [OwnerW-1:0]  grantee;       // the master granted in this cycle (when granted)
  logic [ReqW-1:0]    grantee_req;
  assign granted   = |m_req_ready;
  assign port_fire = req_valid && req_ready_i;
  always_comb begin
    grantee = '0;
    for (int unsigned m = 0; m < Masters; m++) begin
      if (m_req_ready[m]) grantee = OwnerW'(m);
    end
  end
  assign grantee_req = {m_req_write_i[grantee], m_req_addr_i[grantee*AddrW +: AddrW],
                        m_req_wdata_i[grantee*DataW +: DataW]};

  // Granted and not answered (what the arbiter must bound), granted and not yet accepted by the port
  // (the register slice), accepted by the port and not answered (what the port may answer).
  logic [1:0]        in_flight_q, to_port_q, at_port_q;
  logic [OwnerW-1:0] to_port_owner_q;  // the master whose request waits for the port
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      in_flight_q <= '0;
      to_port_q   <= '0;
      at_port_q   <= '0;
    end else begin
      in_flight_q <= in_flight_q + 2'(granted) - 2'(rsp_valid_i);
      to_port_q   <= to_port_q + 2'(granted) - 2'(port_fire);
      at_port_q   <= at_port_q + 2'(port_fire) - 2'(rsp_valid_i);
    end
    if (granted) to_port_owner_q <= grantee;
  end

  // The port's rule (the port is reset with the arbiter, so it does not answer in a reset cycle).
`ifndef MUTATE_ARB_SPURIOUS
  always_comb begin
    a_rsp_after_request: assume (!rsp_valid_i || (rst_ni && at_port_q != '0));
  end
`endif

  // The tracked request: its master and the number of answers due before its own.
  logic              tag_busy_q, tag_behind_q;  // tag_behind_q: an older request was answered since
  logic [OwnerW-1:0] tag_owner_q;
  logic [1:0]        tag_ahead_q;
  logic              tag_answered;
  assign tag_answered = rst_ni && tag_busy_q && rsp_valid_i && tag_ahead_q == '0;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      tag_busy_q <= 1'b0;
    end else if (tag_busy_q) begin
      if (tag_answered) begin
        tag_busy_q <= 1'b0;
      end else if (rsp_valid_i) begin
        tag_ahead_q  <= tag_ahead_q - 1'b1;
        tag_behind_q <= 1'b1;
      end
    end else if (port_fire && tag_i) begin
      tag_busy_q   <= 1'b1;
      tag_behind_q <= 1'b0;
      tag_owner_q <= to_port_owner_q;
      tag_ahead_q <= at_port_q - 2'(rsp_valid_i);
    end
  end


  // Fairness: per master, the grant opportunities it has waited through while holding its request.
  logic can_grant;
  assign can_grant = in_flight_q < 2'(MaxOutstanding) && (!req_valid || req_ready_i);
  logic [1:0]         waited_q [Masters];
  logic [Masters-1:0] waited_ok;
  for (genvar m = 0; m < Masters; m++) begin : gen_wait
    always_ff @(posedge clk_i) begin
      if (!rst_ni || !m_req_valid_i[m] || m_req_ready[m]) waited_q[m] <= '0;
      else if (can_grant && waited_q[m] != '1)           waited_q[m] <= waited_q[m] + 1'b1;
    end
    assign waited_ok[m] = waited_q[m] < 2'(Masters);
  end

  // ---------------------------------------------------------------------------------------------
  // Properties.
  always_comb begin
    if (past_valid_q) begin
      // At most one grant, and only to a master that requests.
      p_one_grant:          assert ($onehot0(m_req_ready));
      p_grant_to_requester: assert ((m_req_ready & ~m_req_valid_i) == '0);
      // Requests in flight stay bounded: no grant while MaxOutstanding are unanswered.
      p_in_flight_bound:    assert (in_flight_q <= 2'(MaxOutstanding));
      // Work conserving: a request is granted in every opportunity.
      p_work_conserving:    assert (!(can_grant && |m_req_valid_i) || granted);
      // The port holds exactly the granted requests it has not taken: none lost, none duplicated.
      p_port_one:           assert (to_port_q <= 2'd1);
      p_port_valid:         assert (req_valid == (to_port_q == 2'd1));
      // Every answer goes to exactly one master, and only an answer does.
      p_rsp_one:            assert (rsp_valid_i ? $onehot(m_rsp_valid) : m_rsp_valid == '0);
      // The answer to the tracked request goes to the master that issued it.
      if (tag_answered) begin
        p_rsp_to_owner:     assert (m_rsp_valid == Masters'(1) << tag_owner_q);
      end
      // Bounded fairness: no master misses Masters opportunities in a row.
      p_fair:               assert (&waited_ok);
    end
  end

  always_ff @(posedge clk_i) begin
    if (past_valid_q) begin
      // The port sees the granted request, unchanged, from the next cycle...
      if ($past(rst_ni && granted)) begin
        p_port_gets_grant: assert (req_valid && {req_write, req_addr, req_wdata} == $past(grantee_req));
      end
      // ...and until it takes it.
      if ($past(rst_ni && req_valid && !req_ready_i)) begin
        p_port_held: assert (req_valid && {req_write, req_addr, req_wdata} ==
                             $past({req_write, req_addr, req_wdata}));
      end
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Induction probes: the round-robin pointer and the owners FIFO, joined to the arbiter's registers
  // when the design is flattened (hierconn; run_bmc.sh fails if one is left without a driver).
  (* hierconn *) logic [OwnerW-1:0] \u_arb.last_q ;
  (* hierconn *) logic              \u_arb.u_owners.rptr_q ;
  (* hierconn *) logic              \u_arb.u_owners.wptr_q ;
  (* hierconn *) logic [1:0]        \u_arb.u_owners.count_q ;
  (* hierconn *) logic [OwnerW-1:0] \u_arb.u_owners.mem_q[0] ;
  (* hierconn *) logic [OwnerW-1:0] \u_arb.u_owners.mem_q[1] ;

  logic [OwnerW-1:0] owner [MaxOutstanding];
  assign owner[0] = \u_arb.u_owners.mem_q[0] ;
  assign owner[1] = \u_arb.u_owners.mem_q[1] ;

  always_comb begin
    if (past_valid_q) begin
      // The owners FIFO holds one entry per request in flight, oldest at the read pointer; the
      // youngest is the one still waiting for the port, the tracked one is tag_ahead_q from the head.
      i_owners_count:  assert (\u_arb.u_owners.count_q  == in_flight_q);
      i_owners_ptrs:   assert (\u_arb.u_owners.wptr_q  == (\u_arb.u_owners.rptr_q  ^ in_flight_q[0]));
      i_owners_masters: assert ((in_flight_q == '0 || owner[\u_arb.u_owners.rptr_q ] < OwnerW'(Masters)) &&
                                (in_flight_q != 2'd2 || owner[!\u_arb.u_owners.rptr_q ] < OwnerW'(Masters)));
      i_in_flight:     assert (3'(in_flight_q) == 3'(to_port_q) + 3'(at_port_q));
      if (to_port_q == 2'd1) begin
        i_port_owner:  assert (owner[!\u_arb.u_owners.wptr_q ] == to_port_owner_q);
      end
      if (tag_busy_q) begin
        i_tag_owner:   assert (tag_ahead_q < at_port_q &&
                               owner[\u_arb.u_owners.rptr_q  ^ tag_ahead_q[0]] == tag_owner_q);
      end
      i_last_range:    assert (\u_arb.last_q  < OwnerW'(Masters));
    end
  end

  // A master that has waited w opportunities is at most Masters - w masters after the last one
  // granted: every grant to another master moves the pointer towards it.
  logic [Masters-1:0] distance_ok;
  for (genvar m = 0; m < Masters; m++) begin : gen_fair_distance
    logic [1:0] distance;  // 1 .. Masters
    assign distance = (OwnerW'(m) > \u_arb.last_q ) ? OwnerW'(m) - \u_arb.last_q
                                                    : OwnerW'(m) + OwnerW'(Masters) - \u_arb.last_q ;
    assign distance_ok[m] = waited_q[m] == '0 || 3'(waited_q[m]) + 3'(distance) <= 3'(Masters);
  end
  always_comb begin
    if (past_valid_q) begin
      i_fair_distance: assert (&distance_ok);
    end
  end

  // Reachability: the FIFO of owners full, a master waiting its longest, an answer to the tracked
  // request behind another one.
  always_comb begin
    if (past_valid_q) begin
      c_in_flight_full: cover (in_flight_q == 2'(MaxOutstanding) && |m_req_valid_i);
      c_longest_wait:   cover (can_grant && waited_q[0] == 2'(Masters - 1) && m_req_valid_i[0]);
      c_answer_behind:  cover (tag_answered && tag_owner_q == 2'd2 && tag_behind_q);
    end
  end

endmodule
