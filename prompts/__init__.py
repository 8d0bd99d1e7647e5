# Prompt text as data (`text/*.md`) and system-prompt assembly: slot ids and order,
# the builder that returns the frozen prefix plus its slot map, context-file discovery,
# and the `<memory-context>` recall fence. `prompts` imports only the stdlib and pydantic.

__all__: list[str] = []
