"""LLM judges of finished runs and the outcomes of their calls, one module per concern. What an
evaluator judges with lives in engine.judging (the rubrics and the reply parsing, the M3 prompts, Task
Completion and Information Grounding of a task, the judges' agreement, the call outcome rules); this
package holds the pool that answers, the tool catalogue and the judge app.

- `rollout.judges.cache`: every judge reply on disk, keyed by judge identity, prompt version and payload;
- `rollout.judges.pool`: the judges of a pool, their drivers behind the cache, usage and cost, a
  pool's own prompts file;
- `rollout.judges.images`: the images a judge is shown (``file=`` references, the task's image), read by
  the one path rule of the task's folders;
- `rollout.judges.catalogue`: the tool catalogue from a servers config, a recorded catalogue or a tools JSON
  (servers are started to list their tools), for the evaluators that read it;
- `rollout.judges.scripted`: the scripted judging policy (demo, tests, benchmark);
- `rollout.judges.run`, `rollout.judges.cli`: the judge app (Hydra, config root conf/judge/), running every
  configured evaluator of engine.evaluators; `rollout.judges.inputs`: what it reads besides them.
"""
