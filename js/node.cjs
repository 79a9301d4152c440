// The package under `require` (Node, Jest, ts-jest): the CommonJS build (pkg/node/, made by
// scripts/node-build.mjs), which reads the .wasm from disk and is ready once required; `init()`
// is kept, and does nothing, so code written for the ES-module entry runs unchanged. JobGuard
// is wrapped as in js/index.js.
"use strict";

// jsdom (Jest's browser environment) has no TextDecoder or TextEncoder; Node's are the same.
if (typeof globalThis.TextDecoder === "undefined" || typeof globalThis.TextEncoder === "undefined") {
  const util = require("util");
  globalThis.TextDecoder ??= util.TextDecoder;
  globalThis.TextEncoder ??= util.TextEncoder;
}

const glue = require("../pkg/node/superset_job_guard.js");
const { freeable } = require("../pkg/node/freeable.js");

module.exports = {
  ...glue,
  JobGuard: freeable(glue.JobGuard, glue.__freedError),
  default: async function init() {},
  __esModule: true,
};
