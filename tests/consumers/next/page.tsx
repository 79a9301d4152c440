// The app's page (a server component), rendering the client component.
import { Jobs } from "./Jobs";

export default function Home() {
  return (
    <main>
      <h1>Jobs</h1>
      <Jobs />
    </main>
  );
}
