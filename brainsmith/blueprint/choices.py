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
# build.board: every Lattice board brainsmith builds for, as data, one row each: name ->
# (its part's family as ``brainsmith.hardware.place_route``'s ``Family.name``, the
# amaranth-boards module and platform class describing it, its USB UART's top baud rate (0:
# none, its USB port is the FPGA's own: no host link, no bitstream of brainsmith's), and
# openFPGALoader's name for it ("": none of its own there, so brainsmith flash refuses it))
BOARDS: dict[str, tuple[str, str, str, int, str]] = {
    "ulx3s-12f": ("ECP5", "ulx3s", "ULX3S_12F_Platform", 3_000_000, "ulx3s"),
    "ulx3s-25f": ("ECP5", "ulx3s", "ULX3S_25F_Platform", 3_000_000, "ulx3s"),
    "ulx3s-45f": ("ECP5", "ulx3s", "ULX3S_45F_Platform", 3_000_000, "ulx3s"),
    "ulx3s-85f": ("ECP5", "ulx3s", "ULX3S_85F_Platform", 3_000_000, "ulx3s"),
    "orangecrab-r0.2-25f": ("ECP5", "orangecrab_r0_2", "OrangeCrabR0_2_25FPlatform", 0, ""),
    "orangecrab-r0.2-85f": ("ECP5", "orangecrab_r0_2", "OrangeCrabR0_2_85FPlatform", 0, ""),
    "versa-ecp5": ("ECP5", "versa_ecp5", "VersaECP5Platform", 115_200, ""),
    "versa-ecp5-5g": ("ECP5", "versa_ecp5_5g", "VersaECP55GPlatform", 115_200, ""),
    "ecp5-5g-evn": ("ECP5", "ecp5_5g_evn", "ECP55GEVNPlatform", 115_200, "ecp5_evn"),
    "tang-primer-20k": (
        "Gowin",
        "tang_primer_20k",
        "TangPrimer20kPlatform",
        3_000_000,
        "tangprimer20k",
    ),
    "tang-nano-9k": ("Gowin", "tang_nano_9k", "TangNano9kPlatform", 3_000_000, "tangnano9k"),
    "icebreaker": ("iCE40", "icebreaker", "ICEBreakerPlatform", 3_000_000, "ice40_generic"),
    # described by brainsmith (hardware/board/platforms.py): amaranth-boards has no GateMate
    "gatemate-a1-evb": (
        "GateMate",
        "brainsmith.hardware.board.platforms",
        "GateMateA1EVBPlatform",
        115_200,
        "olimex_gatemateevb",
    ),
}
QUICK_START_BOARD = "ulx3s-85f"  # the board README's quick start builds for
LATTICE_BOARDS = tuple(BOARDS)
NO_UART_BOARDS = tuple(name for name, row in BOARDS.items() if not row[3])
LINKED_BOARDS = tuple(board for board in LATTICE_BOARDS if board not in NO_UART_BOARDS)
BOARD_FAMILIES = {name: row[0] for name, row in BOARDS.items()}


def board_families(boards: tuple[str, ...] = LATTICE_BOARDS) -> str:
    """The families of ``boards`` by name, for a message: "ECP5, Gowin or iCE40"."""
    names = list(dict.fromkeys(BOARD_FAMILIES[board] for board in boards))
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def boards_by_family(boards: tuple[str, ...] = LATTICE_BOARDS) -> str:
    """``boards`` grouped by family, for a help text: "ulx3s-12f, ulx3s-25f (ECP5),
    icebreaker (iCE40)"."""
    families = dict.fromkeys(BOARD_FAMILIES[board] for board in boards)
    return ", ".join(
        ", ".join(b for b in boards if BOARD_FAMILIES[b] == family) + f" ({family})"
        for family in families
    )


def board_examples() -> str:
    """A board of each family with a host link, for a help text: "ulx3s-85f,
    tang-primer-20k, icebreaker, gatemate-a1-evb"."""
    families = dict.fromkeys(BOARD_FAMILIES[board] for board in LINKED_BOARDS)
    return ", ".join(str(family_board(family)) for family in families)


def family_board(family: str) -> str | None:
    """A board of ``family`` with a host link, the quick start's where it is of that family,
    or None."""
    ours = [b for b in LINKED_BOARDS if BOARD_FAMILIES[b] == family]
    return QUICK_START_BOARD if QUICK_START_BOARD in ours else next(iter(ours), None)


def lattice_board(name: object) -> str | None:
    """``name`` as a key of LATTICE_BOARDS (any case), or None when it is not one."""
    key = name.strip().lower() if isinstance(name, str) else ""
    return key if key in LATTICE_BOARDS else None
