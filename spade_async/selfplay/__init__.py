"""The method: the curriculum (live set, delayed designer scoring), designs joining it every k
steps, rewards, health figures and steering; the designer (design/) and the agent (play/)."""
