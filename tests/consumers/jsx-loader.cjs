// A webpack loader for the React example's .jsx: esbuild's JSX transform (the automatic
// runtime, as Vite's), so webpack bundles it without Babel.
const { transformSync } = require("esbuild");

module.exports = function jsx(source) {
  return transformSync(source, { loader: "jsx", jsx: "automatic", format: "esm", target: "es2022" }).code;
};
