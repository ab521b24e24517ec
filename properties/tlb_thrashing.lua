-- TLBThrashing: an object's accesses miss the data TLB: consecutive
-- accesses land on different pages (a column walk, a large stride), as in
-- the FFT transpose of seed 000.
--
--   condition   tlb_miss >= min_misses, tlb_miss / mem_ref >= rate, and the
--               object takes >= share of the program's tlb_miss
--   severity    the object's TLB stall cycles (tlb_miss x lat_tlb_miss,
--               scaled to the measured stall cycles), over the program's
--               estimated cycles (without them: its share of tlb_miss)
--   confidence  the context's (asl.confidence)
local PAGE = 4096

return {
  name = "TLBThrashing",
  summary = "an object's accesses miss the data TLB (page-sized strides)",
  refines = "HotObject",
  context = "object",
  needs = { "tlb_miss", "mem_ref" },
  params = { rate = 0.15, share = 0.1, min_misses = 1000 },

  condition = function(ctx, p)
    local t = ctx.v.tlb_miss
    return t >= p.min_misses and t / ctx.v.mem_ref >= p.rate and ctx.share("tlb_miss") >= p.share
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    return asl.severity(ctx, asl.stall(ctx).tlb, ctx.share("tlb_miss"))
  end,

  threads = function(ctx, p) return asl.threads_with(ctx, "tlb_miss", 0.01) end,

  evidence = function(ctx, p)
    return string.format("%s TLB misses, 1 per %.1f accesses (%s of the program's); %s pages",
                         asl.count(ctx.v.tlb_miss), ctx.v.mem_ref / ctx.v.tlb_miss,
                         asl.pct(ctx.share("tlb_miss")),
                         asl.count(math.ceil(ctx.object.size / PAGE)))
  end,

  advice = function(ctx, p)
    local o = ctx.object
    return string.format("One TLB miss every %.1f accesses to %s (%s, %s pages of 4 KiB): " ..
      "successive accesses are a page (4 KiB) or more apart, e.g. walking a column of a " ..
      "row-major matrix whose rows are >= 4 KiB long. Block the loops (e.g. 8x8 tiles for a " ..
      "transpose, so a tile's rows stay within the TLB's reach), interchange them so the " ..
      "inner loop walks consecutive addresses, or back %s with huge pages " ..
      "(madvise(MADV_HUGEPAGE) on a 2 MiB-aligned block: 512x the reach).",
      ctx.v.mem_ref / ctx.v.tlb_miss, o.name, asl.bytes(o.size),
      asl.count(math.ceil(o.size / PAGE)), o.name)
  end,
}
