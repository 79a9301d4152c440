// React 17: ReactDOM.render, and use-sync-external-store's shim for the provider.
import { render } from "react-dom";
import { useSyncExternalStore } from "use-sync-external-store/shim";

const container = document.getElementById("root");
export const mount = { render: (element) => render(element, container), useSyncExternalStore };
