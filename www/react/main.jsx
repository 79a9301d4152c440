// The React dashboard: what www/app.js does, with superset-job-guard/react. Served by
// `npm start` under /react/ (built by Vite); bundled by Vite and webpack 5 in `npm test`, and
// for React 17 (tests/consumers/react17/main.jsx mounts it the way React 17 does).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { JobGuardProvider } from "superset-job-guard/react";

import { App } from "./App.jsx";
import { me, options } from "./setup.js";

const root = createRoot(document.getElementById("root"));
// For the tests: unmounting the app frees its guard.
window.unmountApp = () => root.unmount();
root.render(
  <StrictMode>
    <JobGuardProvider options={options}>
      <App me={me} />
    </JobGuardProvider>
  </StrictMode>,
);
