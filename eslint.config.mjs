// ESLint (flat config): @eslint/js and typescript-eslint recommended, plus unused variables and
// imports and consistent type imports. Run by `npm run lint` (part of `npm test`).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

// Node.js globals the plain JavaScript files use (the TypeScript files are checked by tsc instead).
const nodeGlobals = {
  AbortController: "readonly",
  Buffer: "readonly",
  URL: "readonly",
  __dirname: "readonly",
  clearTimeout: "readonly",
  console: "readonly",
  fetch: "readonly",
  module: "writable",
  process: "readonly",
  require: "readonly",
  setTimeout: "readonly",
};

export default defineConfig(
  {
    ignores: [
      "dist/",
      "node_modules/",
      // Go modules: the Karpenter driver and the toolchain's plugins (their build outputs and vendored trees).
      "driver/",
      "toolchain/*/",
      ".nodefleet/",
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ["**/*.js", "**/*.cjs", "**/*.mjs"],
    languageOptions: { globals: nodeGlobals },
  },
  {
    // bin/nodefleet.js is CommonJS: it requires the compiled CLI.
    files: ["bin/**/*.js", "**/*.cjs"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    // Tests read JSON and YAML documents (API answers, stack files, exported state) whose shape is
    // what they assert; `any` there spares a cast per property. The shipped code stays without it.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrorsIgnorePattern: "^_",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
      "@typescript-eslint/consistent-type-imports": ["error", { prefer: "type-imports", fixStyle: "inline-type-imports" }],
    },
  },
);
