// React 18 and 19: createRoot; React's own useSyncExternalStore.
import { createRoot } from "react-dom/client";

const root = createRoot(document.getElementById("root"));
export const mount = { render: (element) => root.render(element), useSyncExternalStore: undefined };
