"""The words a blueprint option takes, defined once: the blueprint checks, the command line
(``click.Choice``) and the API check against these. Constants only, cheap to import."""

VERIFY_MODES = ("each", "final", "rtlsim", "none")  # rtlsim: final + Verilator per RTL layer
PREFERENCES = ("auto", "rtl", "hls")  # hw_compiler.prefer: which backend style goes first
FOLDING_SEARCHES = ("brainsmith", "finn")  # build.folding.search
