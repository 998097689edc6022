-- tests/golden/dbg_run.lua — run sessions on seed case S1 (tests/golden/seed_s1.lua) and the
-- two-layer model (tests/golden/dbg_model.lua), for the transcript dbg_run.in.
dofile("tests/golden/seed_s1.lua")
dofile("tests/golden/dbg_model.lua")
