// Classroom randomisers: what a student's phone does to their commute before anything is sent.
//
// One function per local mechanism of dpcore/mechanisms (GRR, OUE and OLH in local.py, HR in
// hadamard.py). Each takes the round's public `spec` (numbers computed by the server from the
// Python mechanism: dpcore.classroom.client_spec) and the true cell `item`, and returns ONLY the
// report, in the field layout of that mechanism's Python `perturb` for one person. The true cell
// is not part of any report. Randomness comes from crypto.getRandomValues only; no network.
// Audited in tests/browser/test_classroom_randomisers.py (frequencies vs p and q, unbiasedness).

"use strict";

// Uniform whole number in [0, n), 1 ≤ n ≤ 2^32: rejection sampling, so no modulo bias.
function dpUniformInt(n) {
  const word = new Uint32Array(1);
  const limit = Math.floor(4294967296 / n) * n;
  for (;;) {
    crypto.getRandomValues(word);
    if (word[0] < limit) return word[0] % n;
  }
}

// Uniform real in [0, 1) with 53 random bits (every double of that form equally likely).
function dpUniformReal() {
  const words = new Uint32Array(2);
  crypto.getRandomValues(words);
  return ((words[0] >>> 5) * 67108864 + (words[1] >>> 6)) / 9007199254740992;
}

function dpCoin(probability) {
  return dpUniformReal() < probability;
}

// Uniform over the size − 1 values of [0, size) other than `own` (as `other += other >= own`).
function dpOtherThan(own, size) {
  const other = dpUniformInt(size - 1);
  return other >= own ? other + 1 : other;
}

// ((a·x + b) mod P) mod g, dpcore's universal_hash. a, b < 2^31 and x ≤ 50 keep a·x + b below
// 2^53, so doubles compute it exactly.
function dpHash(a, b, x, g, prime) {
  return ((a * x + b) % prime) % g;
}

function dpParity(value) {
  let bits = 0;
  for (let v = value; v; v &= v - 1) bits ^= 1;
  return bits;
}

const dpRandomisers = {
  // A number question (dpcore/interfaces/classroom/numbers.py, Duchi, Jordan & Wainwright's
  // one-bit mechanism): the value clamped to [0, B], one bit, 1 with probability
  // 1/2 + (2v/B − 1)·slope, slope = (e^ε − 1)/(2(e^ε + 1)) from the server.
  number(spec, value) {
    const clamped = Math.min(Math.max(Number(value) || 0, 0), spec.bound);
    return { y: dpCoin(0.5 + (2 * clamped / spec.bound - 1) * spec.slope) ? 1 : 0 };
  },

  // Generalised randomised response: the true cell with probability p, else one of the other d − 1.
  grr(spec, item) {
    return { y: dpCoin(spec.p) ? item : dpOtherThan(item, spec.d) };
  },

  // Optimised unary encoding: d bits, the own bit 1 with probability p, every other with q.
  oue(spec, item) {
    let bits = "";
    for (let v = 0; v < spec.d; v++) bits += dpCoin(v === item ? spec.p : spec.q) ? "1" : "0";
    return { bits };
  },

  // Optimised local hashing: the hash seed (a, b) the page issued this phone (uniform over the
  // family, drawn by the server: see dpcore.interfaces.classroom.Ticket), then randomised
  // response over g buckets.
  olh(spec, item) {
    const [a, b] = spec.seed;
    const bucket = dpHash(a, b, item, spec.g, spec.prime);
    return { a, b, y: dpCoin(spec.p) ? bucket : dpOtherThan(bucket, spec.g) };
  },

  // Hadamard response: with probability `uniform` any of the K outputs, else a uniform output of
  // the item's set C (its Hadamard row is +1 there) inside its block; the offset's parity is forced
  // by toggling the row's lowest set bit, as dpcore's force_parity.
  hr(spec, item) {
    if (dpCoin(spec.uniform)) return { y: dpUniformInt(spec.outputs) };
    const symbol = spec.permutation ? spec.permutation[item] : item;
    const perBlock = spec.blockSize - 1;
    const block = Math.floor(symbol / perBlock);
    const row = (symbol % perBlock) + 1;
    let offset = dpUniformInt(spec.blockSize);
    if (dpParity(offset & row)) offset ^= row & -row;
    return { y: block * spec.blockSize + offset };
  },
};

// What this report says about the sender's own cell, in words (for the step-by-step).
function dpOutcome(spec, item, report) {
  switch (spec.mechanism) {
    case "grr":
      return report.y === item
        ? "This time the phone kept the truth."
        : "This time the phone picked another commute at random.";
    case "oue": {
      const ones = report.bits.split("").filter((bit) => bit === "1").length;
      return `This time the own bit came out ${report.bits[item]}, and ${ones} bits are 1 in all.`;
    }
    case "olh": {
      const bucket = dpHash(report.a, report.b, item, spec.g, spec.prime);
      return `Your commute hashes to bucket ${bucket}; this time the phone ` +
        (report.y === bucket ? "kept it." : `sent bucket ${report.y} instead.`);
    }
    case "hr": {
      const symbol = spec.permutation ? spec.permutation[item] : item;
      const perBlock = spec.blockSize - 1;
      const start = Math.floor(symbol / perBlock) * spec.blockSize;
      const offset = report.y - start;
      const inside = offset >= 0 && offset < spec.blockSize &&
        !dpParity(((symbol % perBlock) + 1) & offset);
      return `This time it sent ${report.y}, which is ${inside ? "in" : "not in"} your set C.`;
    }
    default:
      throw new Error(`unknown mechanism ${spec.mechanism}`);
  }
}
