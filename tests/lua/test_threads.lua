-- tests/lua/test_threads.lua — torch.set_num_threads / get_num_threads and thread-count
-- independence of results (core/parallel.h). Layer: tests.
local T = dofile("tests/lua/harness.lua")

-- The results of large kernels, computed with the thread count in force.
local function compute()
  torch.manual_seed(3)
  local x = torch.randn(300, 700)        -- 210000 elements: above the parallel threshold
  local w = torch.randn(700, 500)
  local v = torch.randn(700)
  return {
    (x * 2 + 1):sum():item(),
    x:softmax(-1)[{7, 11}]:item(),
    torch.mv(w:t(), v)[{42}]:item(),
    x:matmul(w)[{3, 4}]:item(),
    x:amax(1)[{5}]:item(),
    torch.nn.functional.layer_norm(x, {700})[{9, 10}]:item(),
    x:cumsum(1)[{1, 699}]:item(),
  }
end

T.test("set_num_threads / get_num_threads", function()
  local auto = torch.get_num_threads()
  T.truthy(auto >= 1, "at least one thread")
  torch.set_num_threads(1)
  T.eq(torch.get_num_threads(), 1)
  torch.set_num_threads(3)
  T.eq(torch.get_num_threads(), 3)
  torch.set_num_threads(0) -- back to automatic
  T.eq(torch.get_num_threads(), auto)
  T.checkerr("positive number of threads", torch.set_num_threads, -1)
  T.checkerr("positive number of threads", torch.set_num_threads, 5000)
  T.checkerr("integer expected", torch.set_num_threads, "two")
end)

T.test("results do not depend on the thread count", function()
  torch.set_num_threads(1)
  local one = compute()
  torch.set_num_threads(2)
  local two = compute()
  torch.set_num_threads(4)
  local four = compute()
  torch.set_num_threads(0)
  local auto = compute()
  for i = 1, #one do
    T.eq(two[i], one[i], "2 threads, result " .. i)
    T.eq(four[i], one[i], "4 threads, result " .. i)
    T.eq(auto[i], one[i], "automatic, result " .. i)
  end
end)

T.done()
