"""Write the per-file facts of the installed QONNX and FINN releases to
``brainsmith/frameworks/known/`` (``make known-facts``): a cold discovery then parses none of
their files whose content matches (``FrameworkAdapter.known_facts``). Run it after upgrading a
pinned framework or changing the scanner; ``tests/test_known_facts.py`` fails until then."""

from __future__ import annotations

from brainsmith.plugin.adapters import adapter_classes


def main() -> None:
    for cls in adapter_classes():
        adapter = cls()
        count = adapter.write_known_facts()
        print(f"{cls.framework}: facts of {count} files -> {cls.known_facts_file}")


if __name__ == "__main__":
    main()
