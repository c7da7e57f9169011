"""Archive re-evaluation: retired environments played again by the live adapter (forgetting).

``sample`` chooses and keeps the fixed sample and scores a round (pure); ``player`` runs the
rounds beside the pipeline's stages, as the in-loop eval does.
"""
