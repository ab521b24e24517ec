-- others.lua ROUNDS - bench/sim_speed_long/others.sh's Lua case: plain
-- numeric Lua on tables made once (few allocations, so that the oracle's
-- file stays small): a matrix product, a sieve, a table of integer keys.
-- Prints one checksum line.
local rounds = tonumber(arg[1]) or 1
local m = 90
local a, b, c = {}, {}, {}
for i = 1, m do
  a[i], b[i], c[i] = {}, {}, {}
  for j = 1, m do
    a[i][j] = (i + j) % 7
    b[i][j] = (i * j) % 5
    c[i][j] = 0
  end
end
local lim = 200000
local sieve = {}
for i = 1, lim do sieve[i] = true end
local keys, h = 1 << 15, {}
for i = 1, keys do h[i * 2654435761 % 1000003] = 0 end
local sum, x = 0, 12345
for r = 1, rounds do
  for i = 1, m do
    local ai, ci = a[i], c[i]
    for j = 1, m do
      local s = 0
      for k = 1, m do s = s + ai[k] * b[k][j] end
      ci[j] = s
    end
  end
  sum = sum + c[r % m + 1][(r * 7) % m + 1]
  for i = 2, lim do sieve[i] = true end
  for i = 2, lim do
    if sieve[i] then
      for j = i * i, lim, i do sieve[j] = false end
    end
  end
  for i = 2, lim do if sieve[i] then sum = sum + 1 end end
  for i = 1, keys do
    x = (x * 1103515245 + 12345) % 2147483648
    local k = (x % keys + 1) * 2654435761 % 1000003
    h[k] = h[k] + 1
  end
end
print(sum)
