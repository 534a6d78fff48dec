"""Model drivers: a chat model behind an API, one module per concern.

- `rollout.drivers.base`: settings of a model config, completions, the retry/backoff loop and the
  classification of SDK errors (retry or fail);
- `rollout.drivers.images`: workspace images encoded for a request (scaled down, memoised);
- `rollout.drivers.openai_chat`: chat completions over the openai SDK (any OpenAI-compatible API);
- `rollout.drivers.anthropic_messages`: Anthropic's messages API (the optional extra ``anthropic``);
- `rollout.drivers.scripted`: the scripted model, a loopback chat server the driver starts and stops;
- `rollout.drivers.registry`: providers by name (`register_provider`) and `build_driver(cfg)`.
"""
