export * from './records.js';
export * from './parse.js';
export * from './zip.js';
export * from './builtins.js';
export * from './refs.js';
export {
  SkillService,
  renderSkill,
  renderVersion,
  type SkillListQuery,
  type SkillCreateMeta,
} from './skills.js';
