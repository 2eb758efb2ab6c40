"""The words a blueprint option takes, defined once: the blueprint checks, the command line
(``click.Choice``) and the API check against these. Constants only, cheap to import."""

VERIFY_MODES = ("each", "final", "rtlsim", "none")  # rtlsim: final + Verilator per RTL layer
PREFERENCES = ("auto", "rtl", "hls")  # hw_compiler.prefer: which backend style goes first
FOLDING_SEARCHES = ("brainsmith", "finn")  # build.folding.search
# What a build folds for when it names no throughput, latency or folding of its own, where
# its design unfolded is slower: enough that a big network is not left at a crawl (FINN's
# CNV-w2a2 unfolded: 6.9 fps), little enough that a small network keeps its smallest design
# and a large default part is not filled for nothing (the shipped MLP would unroll fully)
DEFAULT_FPS = 1_000
# build.board: the Lattice boards brainsmith makes bitstreams for (``brainsmith.hardware.board.boards``)
LATTICE_BOARDS = (
    "ulx3s-12f", "ulx3s-25f", "ulx3s-45f", "ulx3s-85f", "orangecrab-r0.2-25f",
    "orangecrab-r0.2-85f", "versa-ecp5", "versa-ecp5-5g", "ecp5-5g-evn",
)  # fmt: skip
# ... of which these have no USB UART (their USB port is the FPGA's own): no host link, no
# bitstream of brainsmith's (build.bitstream)
NO_UART_BOARDS = ("orangecrab-r0.2-25f", "orangecrab-r0.2-85f")
LINKED_BOARDS = tuple(board for board in LATTICE_BOARDS if board not in NO_UART_BOARDS)
# each board's family: its part's, as ``brainsmith.hardware.place_route``'s ``Family.name``
BOARD_FAMILIES = dict.fromkeys(LATTICE_BOARDS, "ECP5")


def board_families(boards: tuple[str, ...] = LATTICE_BOARDS) -> str:
    """The families of ``boards`` by name, for a message."""
    return " or ".join(dict.fromkeys(BOARD_FAMILIES[board] for board in boards))


def lattice_board(name: object) -> str | None:
    """``name`` as a key of LATTICE_BOARDS (any case), or None when it is not one."""
    key = name.strip().lower() if isinstance(name, str) else ""
    return key if key in LATTICE_BOARDS else None
