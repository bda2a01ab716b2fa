"""The package's tools: ``cproducer-perf-test`` (:mod:`.perf`), the local broker
(:mod:`.localbroker`, ``python -m cproducer.localbroker``) and the codec demo (:mod:`.demo`)."""
