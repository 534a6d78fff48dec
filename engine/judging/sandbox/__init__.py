"""The check sandbox: the one place where code a task supplies runs, contained (`runner.run_contained`,
under `supervisor`; a check module is called in `call`). The supervisor and the caller run by path, so
they import only the standard library. Imported from outside through engine.judging only."""
