// The React dashboard (www/react/) mounted the way a React 17 app does (ReactDOM.render), with
// the shim of use-sync-external-store (React 17 has no useSyncExternalStore of its own), which
// the app installs.
import { StrictMode } from "react";
import { render, unmountComponentAtNode } from "react-dom";
import { useSyncExternalStore } from "use-sync-external-store/shim";
import { JobGuardProvider } from "superset-job-guard/react";

import { App } from "./App.jsx";
import { me, options } from "./setup.js";

const root = document.getElementById("root");
window.unmountApp = () => unmountComponentAtNode(root);
render(
  <StrictMode>
    <JobGuardProvider options={options} useSyncExternalStore={useSyncExternalStore}>
      <App me={me} />
    </JobGuardProvider>
  </StrictMode>,
  root,
);
