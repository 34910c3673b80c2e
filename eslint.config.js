// typescript-eslint's recommended type-aware rules over the sources, the tests and the benches,
// run by `npm test` (npm run lint). Floating and misused promises above all: the server's
// background work must never drop a rejection. The few rules turned off are each said why.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'completions/**', 'man/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Off: an `async` method without `await` is how this code meets a Promise-returning interface
      // (credential stores, Kysely's driver, Fastify hooks) so that a throw becomes a rejection;
      // the rules that matter for promises (no-floating-promises, no-misused-promises) stay on.
      '@typescript-eslint/require-await': 'off',
      // `_name` is the convention for a value taken to be left out (a parameter an interface
      // passes, a key removed from an object by destructuring).
      // Off: it reports assertions tsc needs (a tuple cast on a conditional's array, a Kysely builder
      // after a conditional join) and its --fix then breaks the build; an assertion that changes
      // nothing costs nothing at run time.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The API's schemas and the client take the TypeBox builders they use from src/api/type.ts:
    // TypeBox's whole Type namespace is 115 KB that every command against a server would load
    // (issue 31; the schemas of issue 30 brought it back once, unseen, for 4 ms of every start).
    files: ['src/api/**/*.ts', 'src/client/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@sinclair/typebox',
              importNames: ['Type'],
              allowTypeImports: true,
              message: "take the builders from src/api/type.ts (TypeBox's whole Type namespace loads with every command)",
            },
          ],
        },
      ],
    },
  },
  {
    // Kysely's migrations and its driver interfaces are typed over Kysely<any> by design: a
    // migration must not depend on today's schema, and the driver passes rows of any table.
    files: ['src/server/store/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The simulator, the tests and the benches read JSON (the server's answers, the CLI's output)
    // field by field and check it where it is used, as osquery and a test reader do; typing every
    // parsed answer would add a cast per access and check nothing more. The product under src/
    // (server, client, CLI) keeps these rules.
    files: ['src/agent-sim/**/*.ts', 'test/**/*.ts', 'bench/**/*.{ts,mjs,js}', 'scripts/**/*.{ts,mjs,js}'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The tests look for escape sequences in what the CLI printed (colours on a terminal, none
    // elsewhere, none from a hostile server): a control character in their regexes is the point.
    files: ['test/**/*.ts'],
    rules: { 'no-control-regex': 'off' },
  },
  {
    // Plain JavaScript (the launcher, scripts, benches, configs) is outside the TypeScript
    // project: linted without type information, as Node modules.
    files: ['**/*.{js,mjs,cjs}'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    // The launcher is CommonJS (bin/fleetctl.cjs says why): require() is how it loads.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
