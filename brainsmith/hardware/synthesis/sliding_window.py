"""FINN's sliding window (the ``default`` style of ``ConvolutionInputGenerator_rtl``, each
layer's ``<name>_impl.sv`` made from ``swg_template_default.sv``) with its control compared
by sign bits, for Lattice parts.

FINN decides each cycle whether to fetch a window element and whether to read an input by
comparing its element counters (``Current_elem > Newest_buffered_elem``, and
``Newest_buffered_elem - (BUF_ELEM_TOTAL - 1) < First_elem_next_window``), each a subtraction
and a compare in carry chains, and wraps the buffer's read address by adding the increment,
comparing the sum, and adding the correction: three chains in a row. On an LFE5U-85F these
were the conv nets' slowest paths (the CNV at 84.5 MHz, 11.8 ns from the controller's state to
the read address).

Here the counters' differences are kept in registers beside them, moved by the same steps the
counters take, so each decision reads a sign bit; the three sums of the read address are
formed side by side and chosen by their signs. Every register FINN has is kept and moves as
before: the layer answers as FINN's cycle by cycle (tests/test_lattice_rtl.py compares them
in Verilator under random stalls, in several shapes).
"""

from __future__ import annotations

DIFFERENCES = """\
    // brainsmith: the element counters' differences, in registers moved by the counters'
    // own steps, so that fetching and reading test a sign bit (sign: the first is behind)
    localparam int unsigned  COUNTER_BITS = $bits(First_elem_next_window) > $bits(Newest_buffered_elem)?
        $bits(First_elem_next_window) : $bits(Newest_buffered_elem);
    localparam int unsigned  LEAD_BITS = 2 + (COUNTER_BITS > $clog2(BUF_ELEM_TOTAL) + 1?
        COUNTER_BITS : $clog2(BUF_ELEM_TOTAL) + 1);  // a sum of three such numbers
    logic signed [LEAD_BITS-1:0]  Fetch_lead = -1;  // Newest_buffered_elem - Current_elem
    // Newest_buffered_elem - (BUF_ELEM_TOTAL - 1) - Current_elem, and - First_elem_next_window
    logic signed [LEAD_BITS-1:0]  Fetch_room  = -BUF_ELEM_TOTAL;
    logic signed [LEAD_BITS-1:0]  Window_room = -BUF_ELEM_TOTAL;

"""

# (FINN's text, brainsmith's), each to be found once in the layer's file
SIGN_COMPARED = (
    ("    // Control signals/registers\n", DIFFERENCES + "    // Control signals/registers\n"),
    ("!(Current_elem > Newest_buffered_elem)", "!Fetch_lead[LEAD_BITS-1]"),
    (
        "                $signed(Newest_buffered_elem - (BUF_ELEM_TOTAL - 1)) < First_elem_next_window &&\n"
        "                $signed(Newest_buffered_elem - (BUF_ELEM_TOTAL - 1)) < Current_elem\n",
        "                Window_room[LEAD_BITS-1] && Fetch_room[LEAD_BITS-1]\n",
    ),
    (
        "            Newest_buffered_elem <= -1;\n",
        "            Newest_buffered_elem <= -1;\n"
        "            Fetch_lead <= -1;\n"
        "            Fetch_room <= -BUF_ELEM_TOTAL;\n"
        "            Window_room <= -BUF_ELEM_TOTAL;\n",
    ),
    (
        "                automatic logic signed [$clog2(2*BUF_ELEM_TOTAL-1):0]  ra = Window_buffer_read_addr_reg + addr_incr;  // -(BUF_ELEM_TOTAL-1), ..., 2*(BUF_ELEM_TOTAL-1)\n"
        "                automatic logic signed [$clog2(  BUF_ELEM_TOTAL+1):0]  ra_correct =                                   // -BUF_ELEM_TOTAL, 0, BUF_ELEM_TOTAL\n"
        "                    (ra >= BUF_ELEM_TOTAL)? -BUF_ELEM_TOTAL :\n"
        "                    (ra <               0)?  BUF_ELEM_TOTAL : 0;\n"
        "                Window_buffer_read_addr_reg <= ra + ra_correct;\n",
        "                // brainsmith: the three sums side by side, the wrap chosen by their signs\n"
        "                automatic logic signed [$clog2(2*BUF_ELEM_TOTAL)+1:0]  ra = Window_buffer_read_addr_reg + addr_incr;\n"
        "                automatic logic signed [$clog2(2*BUF_ELEM_TOTAL)+1:0]  ra_over = Window_buffer_read_addr_reg + (addr_incr - BUF_ELEM_TOTAL);\n"
        "                automatic logic signed [$clog2(2*BUF_ELEM_TOTAL)+1:0]  ra_under = Window_buffer_read_addr_reg + (addr_incr + BUF_ELEM_TOTAL);\n"
        "                Window_buffer_read_addr_reg <= !ra_over[$left(ra_over)]? ra_over : ra[$left(ra)]? ra_under : ra;\n",
    ),
    (
        "            Newest_buffered_elem <= Newest_buffered_elem + (nbe_rst? ~Newest_buffered_elem : nbe_inc);\n",
        "            Newest_buffered_elem <= nbe_rst? -1 : Newest_buffered_elem + nbe_inc;  // x + ~x = -1\n"
        "            // brainsmith: the differences take the counters' steps (Current_elem and\n"
        "            // First_elem_next_window start again exactly when Newest_buffered_elem does)\n"
        "            Fetch_lead <= nbe_rst? -1 : Fetch_lead + $signed({1'b0, nbe_inc}) - current_step;\n"
        "            Fetch_room <= nbe_rst? -BUF_ELEM_TOTAL : Fetch_room + $signed({1'b0, nbe_inc}) - current_step;\n"
        "            Window_room <= nbe_rst? -BUF_ELEM_TOTAL : Window_room + $signed({1'b0, nbe_inc}) - first_step;\n",
    ),
    (
        "            automatic logic  nbe_inc = 0;\n",
        "            automatic logic  nbe_inc = 0;\n"
        "            // the steps Current_elem and First_elem_next_window take when fetching\n"
        "            automatic logic signed [LEAD_BITS-1:0]  current_step =\n"
        "                (fetch_cmd && Current_elem != LAST_WRITE_ELEM)? addr_incr : 0;\n"
        "            automatic logic signed [LEAD_BITS-1:0]  first_step =\n"
        "                (fetch_cmd && PositionZero)? $signed({1'b0, tail_incr}) : 0;\n",
    ),
)


def sign_compared_window(text: str) -> str:
    """FINN's sliding window (a ``<name>_impl.sv`` of the default style) with its counters'
    differences in registers and its read address wrapped by sign (the module docstring says
    why); other text read as it is."""
    if "swg_controller #(" not in text or any(text.count(f) != 1 for f, _ in SIGN_COMPARED):
        return text  # not the code this was written for
    for finn, ours in SIGN_COMPARED:
        text = text.replace(finn, ours)
    return text


__all__ = ["SIGN_COMPARED", "sign_compared_window"]
