// create-next-app's layout without next/font/google, which downloads its fonts from Google at
// build time (this machine reaches no such host); the rest as generated.
import type { Metadata } from "next";
import "./globals.css";

export const metadata: Metadata = { title: "Jobs" };

export default function RootLayout({ children }: Readonly<{ children: React.ReactNode }>) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
