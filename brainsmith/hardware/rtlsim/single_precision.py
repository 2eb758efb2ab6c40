"""IEEE single precision in Verilator for finn-rtllib's float layers.

finn-rtllib models single-precision arithmetic with ``$bitstoshortreal`` and
``$shortrealtobits``. Verilator computes ``shortreal`` as ``real`` (verilator/verilator#6132)
and these two functions read and write the bits of a *double*: ``$bitstoshortreal(32'h3f800000)``
is 5.3e-315, not 1.0, so every float layer computes with nearly zero. In the copy that is
compiled, both calls become functions of the package below, which convert between the
32-bit encoding and ``real`` exactly and round a ``real`` to the nearest single (ties to
even, subnormals, overflow to infinity). A product of two singles is exact in double, so
it rounds as the hardware does; a sum is rounded twice (to double, then to single), which
differs from one rounding only in rare ties.
"""

from __future__ import annotations

import re

PACKAGE = "bs_single_precision"

SOURCE = f"""`ifndef BS_SINGLE_PRECISION
`define BS_SINGLE_PRECISION
// brainsmith.hardware.rtlsim: the 32-bit encoding of IEEE single precision to and from real.
package {PACKAGE};
	function automatic real to_real(input logic [31:0] f);
		automatic logic [7:0]  e = f[30:23];
		automatic logic [22:0]  m = f[22:0];
		automatic real  r;
		if(e == 0)  r = real'(m) * $bitstoreal(64'h36a0000000000000);  // m * 2**-149
		else if(e == 8'hff)  r = $bitstoreal({{1'b0, 11'h7ff, m, 29'b0}});
		else  r = $bitstoreal({{1'b0, 11'(e) + 11'd896, m, 29'b0}});
		return  f[31]? -r : r;
	endfunction

	function automatic logic [31:0] to_bits(input real r);
		automatic logic [63:0]  d = $realtobits(r);
		automatic int  e = int'(d[62:52]) - 1023 + 127;  // the single exponent field
		automatic longint unsigned  sig = {{12'b0, 1'b1, d[51:0]}};
		automatic int  s = e >= 1? 29 : 30 - e;  // bits dropped from the 53-bit significand
		automatic longint unsigned  kept, rest, half, bits;
		if(d[62:52] == 11'h7ff)  return  d[51:0] != 0? 32'h7fc00000 : {{d[63], 31'h7f800000}};
		if(d[62:52] == 0 || s > 60)  return  {{d[63], 31'b0}};  // below half the least subnormal
		kept = sig >> s;
		rest = sig & ((64'd1 << s) - 1);
		half = 64'd1 << (s - 1);
		if(rest > half || (rest == half && kept[0]))  kept++;
		bits = e >= 1? (64'(e - 1) << 23) + kept : kept;
		if(bits >= 64'h7f800000)  bits = 64'h7f800000;
		return  {{d[63], bits[30:0]}};
	endfunction
endpackage
`endif
"""


def uses_single_precision(text: str) -> bool:
    return "$bitstoshortreal" in text or "$shortrealtobits" in text


def exact_single_precision(text: str) -> str:
    """``text`` with its single-precision conversions done by the package (prepended once
    per compilation, guarded by a define)."""
    if not uses_single_precision(text):
        return text
    text = re.sub(r"\$bitstoshortreal\s*\(", f"{PACKAGE}::to_real(", text)
    text = re.sub(r"\$shortrealtobits\s*\(", f"{PACKAGE}::to_bits(", text)
    return SOURCE + text
