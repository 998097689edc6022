-- tests/golden/dbg_llama_example.lua — the "done when" session on examples/llama.lua itself (the
-- tiny config: 2 layers, dim 64, KV caches (1, 32, 2, 16)), for the transcript
-- dbg_llama_example.in: the single program, two tokens at input_pos 5 as the example, a dynamic
-- sequence length (s0) and the position read by item() (u0), so each cache is written through
-- slice(1, u0, s0 + u0). tests/golden/dbg_llama.lua is a smaller self-contained copy.
local llama = dofile("examples/llama.lua")
model = llama.build("tiny")
model.example_inputs = {torch.tensor({{3, 7}}), torch.tensor({5})}
model.dynamic_shapes = llama.dynamic_shapes(model.cfg)
