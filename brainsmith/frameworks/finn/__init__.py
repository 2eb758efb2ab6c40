"""What brainsmith knows about FINN, in one place: its adapter (discovery), the in-process
workarounds (``env``), its boards and parts, the tables its plugin specs do not carry, and
Python execution of its hardware layers in the hardware's layout."""
