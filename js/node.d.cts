// Types of the package under `require` (js/node.cjs): the CommonJS build's declarations, and
// an init() that has nothing to load.
/// <reference lib="es2015.symbol.wellknown" />
/// <reference lib="esnext.disposable" />
export * from "../pkg/node/superset_job_guard.js";
/** Nothing to load under `require`: the module is ready once required. Kept for code written for the ES entry. */
export default function init(input?: unknown): Promise<void>;
