"""What a build will do: its plan, its context, and what blocks or converts a model."""
