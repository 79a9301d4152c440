// The React dashboard (www/react/) mounted the way a React 17 app does (ReactDOM.render).
import { StrictMode } from "react";
import { render, unmountComponentAtNode } from "react-dom";
import { JobGuardProvider } from "superset-job-guard/react";

import { App } from "./App.jsx";
import { me, options } from "./setup.js";

const root = document.getElementById("root");
window.unmountApp = () => unmountComponentAtNode(root);
render(
  <StrictMode>
    <JobGuardProvider options={options}>
      <App me={me} />
    </JobGuardProvider>
  </StrictMode>,
  root,
);
