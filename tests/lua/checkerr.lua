-- tests/lua/checkerr.lua — `checkerr(msg, f, ...)`: f(...) must raise an error containing msg.
-- Kept for tests that want only this helper; tests/lua/harness.lua provides it as T.checkerr too.
return dofile("tests/lua/harness.lua").checkerr
