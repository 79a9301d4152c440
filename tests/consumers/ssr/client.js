// The browser half: hydrates the server's HTML (no await init(): the provider loads it).
import { createElement as h } from "react";
import { hydrateRoot } from "react-dom/client";
import { App, JOB, seen } from "./app.js";

const errors = [];
hydrateRoot(document.getElementById("root"), h(App), {
  onRecoverableError: (e) => errors.push(String(e?.message ?? e)),
});
const done = () => document.querySelector(`#jobs li`)?.textContent === JOB;
const failed = () => document.getElementById("failed");
const wait = setInterval(() => {
  if (failed()) {
    clearInterval(wait);
    const { code, name } = failed().dataset;
    document.body.dataset.result = JSON.stringify({ failed: { code, name, message: failed().textContent }, first: seen[0] });
  } else if (done()) {
    clearInterval(wait);
    document.body.dataset.result = JSON.stringify({ first: seen[0], last: seen.at(-1), errors });
  }
}, 20);
