"""The model layer the agent and the judges share: chat models behind APIs, one module per concern.

- `rollout.models.base`: settings of a model config, completions under the retry policy and the
  classification of SDK errors (retry or fail);
- `rollout.models.retry`: the one retry policy (tenacity): what is retried, Retry-After, backoff, deadline;
- `rollout.models.errors`: `ModelError`, a model call that failed for good; `MalformedReply`;
- `rollout.models.images`: workspace images encoded for a request (scaled down, memoised);
- `rollout.models.openai_chat`: chat completions over the openai SDK (any OpenAI-compatible API);
- `rollout.models.openai_responses`: OpenAI's Responses API over the openai SDK;
- `rollout.models.gemini`: Gemini over Google's google-genai SDK (the optional extra ``gemini``);
- `rollout.models.anthropic_messages`: Anthropic's messages API (the optional extra ``anthropic``);
- `rollout.models.loopback`: the scripted chat server on loopback and its policies by name
  (`register_policy`);
- `rollout.models.scripted`: the scripted model, a loopback chat server the driver starts and stops;
- `rollout.models.registry`: providers by name (`register_provider`) and `build_driver(cfg)`;
- `rollout.models.replies`: the JSON object and tool calls of a reply;
- `rollout.models.clients`: bounded concurrency and quiet client loggers for runs of many requests.
"""
