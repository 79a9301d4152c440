// A Nuxt 4 app's plugin (app/plugins/job-guard.ts): the guard's Vue plugin. On the server it
// makes no guard (no fetch, no storage); in the browser it loads the module and makes one.
import { createJobGuard } from "superset-job-guard/vue";
import { csrfFetch } from "~/checks/actions.js";

export default defineNuxtPlugin((nuxtApp) => {
  nuxtApp.vueApp.use(createJobGuard({ contract: "task", tabId: "nuxt-tab", fetch: csrfFetch }));
});
