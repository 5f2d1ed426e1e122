// Bundle the web UI (src/) into the Python package: src/agentao/gateway/web/dist/app.{js,css}.
// `npm ci && npm run build`; `pip install` runs it through hatch_build.py when the bundle is
// missing or older than its sources. Nothing is fetched at run time: the UI works offline.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

await esbuild.build({
  entryPoints: { app: here("src/main.js") },
  outdir: here("../src/agentao/gateway/web/dist"),
  bundle: true,
  format: "iife",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: true,
  sourcemap: false,
  legalComments: "eof", // the libraries' license notices stay in the bundle
  logLevel: "info",
});
