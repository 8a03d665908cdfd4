/** The model-provider port's types at their old path (core/src/index.ts exports them from here): see core/src/ports/modelProvider.ts. */
export * from '../ports/modelProvider.js';
