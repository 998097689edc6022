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

-- Whole products, cut by rows (many rows), by columns (few rows) or not at all, in each dtype
-- that goes to BLAS, plain and transposed operands: every element must be the same bits for
-- every thread count (k_linalg.c cuts at multiples of OpenBLAS's register tiles).
T.test("matrix products do not depend on the thread count", function()
  local function products()
    torch.manual_seed(5)
    local out = {}
    for _, s in ipairs({{400, 700, 500}, {20, 1000, 3000}, {129, 257, 1031}, {1000, 64, 1000},
                            {600, 300, 1000}}) do
      local a, b = torch.randn(s[1], s[2]), torch.randn(s[2], s[3])
      out[#out + 1] = a:matmul(b)
      out[#out + 1] = b:t():matmul(a:t())               -- transposed operands
      out[#out + 1] = a:double():matmul(b:double())
    end
    local a = torch.complex(torch.randn(450, 200), torch.randn(450, 200))
    local b = torch.complex(torch.randn(200, 300), torch.randn(200, 300))
    out[#out + 1] = a:matmul(b)
    out[#out + 1] = a:to(torch.complex128):matmul(b:to(torch.complex128))
    out[#out + 1] = torch.bmm(torch.randn(3, 200, 300), torch.randn(3, 300, 400))
    return out
  end
  torch.set_num_threads(1)
  local one = products()
  for _, n in ipairs({2, 3, 0}) do
    torch.set_num_threads(n)
    local got = products()
    for i = 1, #one do T.truthy(torch.eq(got[i], one[i]):all():item(), n .. " threads, product " .. i) end
  end
  torch.set_num_threads(0)
end)

T.done()
