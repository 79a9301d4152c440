// A Vite + Vue 3 app's main.js with the guard's plugin (tests/frameworks/vue/Checks.vue).
import { createApp, h } from "vue";
import { createJobGuard } from "superset-job-guard/vue";
import Checks from "./Checks.vue";
import { csrfFetch } from "./actions.js";

const tab = "vue-tab";
createApp({ render: () => h(Checks, { tab }) })
  .use(createJobGuard({ contract: "task", tabId: tab, fetch: csrfFetch }))
  .mount("#app");
